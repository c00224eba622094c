"""A run's samples condensed into the Result's ``telemetry`` block.

Utilisation is summarised over the measure phase(s) only (compile and warm-up
would drag the mean down); memory peaks over the whole run, since compiling
and loading are where memory runs out.  Where neuron-monitor lists the runtimes
and the sampler knows the workload's processes, each NeuronCore is attributed:
the run's (held by one of its processes), another process's, or idle; a
measure during which only other processes held cores is said to be not this run's.  The digest keeps only the figures it
needs per sample, so an hours-long run on 64 NeuronCores stays small.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from remote_agent.stats import percentile

DeviceKey = Tuple[str, int]
Window = Tuple[float, float]


def _max(current: Optional[int], value: Any) -> Optional[int]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return current
    return value if current is None or value > current else current


def _mean(values: Sequence[float]) -> Optional[float]:
    return sum(values) / len(values) if values else None


class TelemetryDigest:
    """Feed it every sample payload of a run (``add``), then ask for the block (``summary``)."""

    def __init__(self, period_s: float, sources: List[str]) -> None:
        self.period_s = period_s
        self.sources = list(sources)
        self.count = 0
        self._order = []  # type: List[DeviceKey]
        # Per sample: (mid-time of the period it covers, {device: util}, host cpu, workload cpu).
        self._series = []  # type: List[Tuple[float, Dict[DeviceKey, float], Optional[float], Optional[float]]]
        # Per sample: {device: FLOP/s} where the tool counts them (neuron-monitor's flops / effective_flops).
        self._flops = []  # type: List[Dict[DeviceKey, float]]
        self._mem_peak = {}  # type: Dict[DeviceKey, Optional[int]]
        self._mem_total = {}  # type: Dict[DeviceKey, Optional[int]]
        self._util_missing = {}  # type: Dict[DeviceKey, str]
        self._device_mem_peak = None  # type: Optional[int]
        self._host_mem_peak = None  # type: Optional[int]
        self._host_mem_total = None  # type: Optional[int]
        self._rss_peak = None  # type: Optional[int]
        self._runtime_times = []  # type: List[float]  (samples where neuron-monitor listed a Neuron runtime)
        self._runtimes_read = False  # some sample carried neuron-monitor's list of runtime processes
        # Per sample, where the runtimes were told apart (the sampler's "run" mark): (t, the run's cores, other
        # processes' {pid: cores}).
        self._holders = []  # type: List[Tuple[float, List[int], Dict[int, List[int]]]]

    def add(self, t: float, sample: Dict[str, Any]) -> None:
        """Take one sample (the ``sample`` event's payload, stamped ``t``)."""
        self.count += 1
        utils = {}  # type: Dict[DeviceKey, float]
        flops = {}  # type: Dict[DeviceKey, float]
        mems = []  # type: List[Any]
        for device in sample.get("devices") or []:
            key = (str(device.get("kind")), int(device.get("index", 0)))
            if key not in self._mem_peak:
                self._order.append(key)
                self._mem_peak[key] = None
            util = device.get("util_pct")
            if isinstance(util, (int, float)) and not isinstance(util, bool):
                utils[key] = float(util)
            else:
                reason = (sample.get("missing") or {}).get("devices.%d.util_pct" % key[1])
                self._util_missing[key] = reason or (sample.get("missing") or {}).get("devices", "not read")
            rate = device.get("flops")
            if isinstance(rate, (int, float)) and not isinstance(rate, bool):
                flops[key] = float(rate)
            self._mem_peak[key] = _max(self._mem_peak[key], device.get("mem_used"))
            self._mem_total[key] = _max(self._mem_total.get(key), device.get("mem_total"))
            mems.append(device.get("mem_used"))
        if mems and all(isinstance(m, int) and not isinstance(m, bool) for m in mems):
            self._device_mem_peak = _max(self._device_mem_peak, sum(mems))
        host = sample.get("host") or {}
        self._host_mem_peak = _max(self._host_mem_peak, host.get("mem_used"))
        self._host_mem_total = _max(self._host_mem_total, host.get("mem_total"))
        process = sample.get("process") or {}
        self._rss_peak = _max(self._rss_peak, process.get("rss"))
        if "processes" in sample:
            self._runtimes_read = True
        if sample.get("processes"):
            self._runtime_times.append(t)
        rows = [p for p in sample.get("processes") or [] if isinstance(p, dict)]
        if rows and all(isinstance(p.get("run"), bool) for p in rows):
            mine = sorted({c for p in rows if p["run"] for c in p.get("cores") or [] if isinstance(c, int)})
            others = {p["pid"]: [c for c in p.get("cores") or [] if isinstance(c, int)]
                      for p in rows if not p["run"] and isinstance(p.get("pid"), int)}
            self._holders.append((t, mine, others))
        period = sample.get("period_s") or self.period_s
        # A sample describes the period before it: it counts for a window when that period's middle lies inside.
        self._series.append((t - period / 2.0, utils, host.get("cpu_pct"), process.get("cpu_pct")))
        self._flops.append(flops)

    def _measure(self, windows: List[Window], missing: Dict[str, str]) -> Optional[Dict[str, Any]]:
        if not windows:
            missing["measure"] = "the run reached no measure phase"
            return None
        chosen = [n for n, s in enumerate(self._series) if any(start <= s[0] <= end for start, end in windows)]
        inside = [self._series[n] for n in chosen]
        seconds = sum(end - start for start, end in windows)
        if not inside:
            missing["measure"] = ("no sample covers the measure phase (%.2f s in all, sampled every %g s): "
                                  "measure longer (more --steps or --duration) or sample more often"
                                  % (seconds, self.period_s))
            return None
        devices = []
        for key in self._order:
            values = [s[1][key] for s in inside if key in s[1]]
            if not values:
                missing["measure.devices.%d.util_pct" % key[1]] = self._util_missing.get(key, "not read")
            device = {"index": key[1], "kind": key[0], "util_mean_pct": _mean(values),
                      "util_p95_pct": percentile(values, 95), "samples": len(values)}  # type: Dict[str, Any]
            rates = [self._flops[n][key] for n in chosen if key in self._flops[n]]
            if rates:  # the tool's own FLOP count (neuron-monitor), shown beside NeuronBench's
                device["flops_mean"] = _mean(rates)
            devices.append(device)
        host = [s[2] for s in inside if isinstance(s[2], (int, float))]
        process = [s[3] for s in inside if isinstance(s[3], (int, float))]
        return {"windows": len(windows), "seconds": seconds, "samples": len(inside), "devices": devices,
                "host_cpu_mean_pct": _mean(host), "process_cpu_mean_pct": _mean(process)}

    def _attribute(self, measure: Optional[Dict[str, Any]], windows: List[Window], missing: Dict[str, str]) -> None:
        """Which cores were this run's while it measured, from the runtimes neuron-monitor listed then."""
        inside = [h for h in self._holders if any(start <= h[0] <= end for start, end in windows)]
        if not inside:
            return  # the runtimes were not told apart (no workload known, or an older agent's samples)
        mine = sorted({c for _, cores, _ in inside for c in cores})
        others = {}  # type: Dict[int, List[int]]
        for _, _, held in inside:
            for pid, cores in held.items():
                others[pid] = sorted(set(others.get(pid, [])) | set(cores))
        if not mine:
            pids = ", ".join(str(pid) for pid in sorted(others))
            missing["runtime"] = ("neuron-monitor listed only other processes' Neuron runtimes while the run "
                                  "measured (pid %s), none of this run's: its NeuronCore figures are not this "
                                  "run's" % pids)
            return
        if measure is None:
            return
        taken = {c for cores in others.values() for c in cores}
        for device in measure.get("devices") or []:
            if device.get("kind") == "neuroncore":
                index = device.get("index")
                device["held_by"] = "run" if index in mine else ("other" if index in taken else None)
        ours = [d["util_mean_pct"] for d in measure.get("devices") or []
                if d.get("held_by") == "run" and d.get("util_mean_pct") is not None]
        measure["run_cores"] = mine
        measure["run_util_mean_pct"] = sum(ours) / len(ours) if ours else None
        measure["other_processes"] = [{"pid": pid, "cores": cores} for pid, cores in sorted(others.items())]

    def summary(self, windows: List[Window]) -> Dict[str, Any]:
        """The ``telemetry`` block: utilisation over ``windows`` (the measure phases), peaks over the run."""
        missing = {}  # type: Dict[str, str]
        block = {"sources": self.sources, "period_s": self.period_s, "samples": self.count,
                 "measure": None, "peak": None, "missing": missing}  # type: Dict[str, Any]
        if not self.count:
            missing["measure"] = missing["peak"] = "no sample was taken (the run ended within the first period)"
            return block
        block["measure"] = self._measure(windows, missing)
        if self._runtimes_read and windows and not any(
                start <= t <= end for t in self._runtime_times for start, end in windows):
            # TorchNeuron's processes are not yet documented to show in neuron-monitor (research/torchneuron.md §5).
            missing["runtime"] = ("neuron-monitor listed no Neuron runtime while the run measured: its NeuronCore "
                                  "figures are not this run's")
        elif windows:
            self._attribute(block["measure"], windows, missing)
        block["peak"] = {
            "devices": [{"index": key[1], "kind": key[0], "mem_used": self._mem_peak[key],
                         "mem_total": self._mem_total.get(key)} for key in self._order],
            "device_mem_used": self._device_mem_peak, "host_mem_used": self._host_mem_peak,
            "host_mem_total": self._host_mem_total, "process_rss": self._rss_peak,
        }
        for key in ("device_mem_used", "host_mem_used", "process_rss"):
            if block["peak"][key] is None:
                missing["peak." + key] = "no sample had this figure (see the samples' missing reasons)"
        return block


def switched_off(reason: str) -> Dict[str, Any]:
    """The block of a run that sampled nothing on purpose."""
    return {"sources": [], "period_s": 0, "samples": 0, "measure": None, "peak": None,
            "missing": {"measure": reason, "peak": reason}}


def measure_windows(phases: List[Dict[str, Any]], end_t: float) -> List[Window]:
    """(start, end) of every measure phase from the run's ``phase`` events, in order.

    A measure phase without its end (the worker died) runs to ``end_t``.
    """
    windows, open_at = [], {}  # type: List[Window], Dict[Any, float]
    for event in phases:
        if event.get("name") != "measure" or not isinstance(event.get("t"), (int, float)):
            continue
        key = event.get("batch_size")
        if event.get("state") == "start":
            open_at[key] = event["t"]
        elif event.get("state") == "end" and key in open_at:
            windows.append((open_at.pop(key), event["t"]))
    windows.extend((start, end_t) for start in open_at.values())
    return sorted(windows)
