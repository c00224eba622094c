"""Picks the telemetry sources a host has and turns them into one ``sample`` event per period.

The cadence is drift-free: tick *k* is due at ``start + k * period`` on the
monotonic clock, so slow readings never push later samples back, and ticks
missed while the machine stalled are skipped rather than fired in a burst.
Each sample is stamped with ``time.time()`` when its tick fires, the clock of
the workers' ``step`` and ``phase`` events, so samples and steps share one
timeline.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from remote_agent.monitor.neuron import NeuronMonitorSource
from remote_agent.monitor.nvidia import NvidiaSmiSource
from remote_agent.monitor.procfs import ProcfsSource
from remote_agent.probe.commands import NEURON_BIN_DIR, find_tool

HOST_KEYS = ("cpu_pct", "cpu_per_core_pct", "mem_used", "mem_total")
FINAL_SAMPLE_MIN = 0.25  # of a period

Emit = Callable[[float, Dict[str, Any]], None]


def next_tick(tick: int, elapsed_s: float, period_s: float) -> int:
    """The next tick to wait for after ``tick`` fired and ``elapsed_s`` have passed since the start.

    Normally ``tick + 1``; after a stall, the first tick still in the future: missed ticks are
    dropped, not fired in a burst.
    """
    return max(tick + 1, int(elapsed_s / period_s) + 1)


def host_sources(period_s: float, root_pid: Optional[int] = None,
                 neuron_config: Optional[str] = None) -> List[Any]:
    """The sources this host has: neuron-monitor and nvidia-smi when installed, /proc always.

    Args:
        period_s: sampling period, also given to the tools.
        root_pid: the workload's processes are this pid's descendants (None: host only).
        neuron_config: where to write neuron-monitor's config (None: a temporary file).
    """
    tools = []  # type: List[Any]
    path = find_tool("neuron-monitor", [NEURON_BIN_DIR])
    if path:
        tools.append(NeuronMonitorSource(path, period_s, neuron_config))
    path = find_tool("nvidia-smi")
    if path:
        tools.append(NvidiaSmiSource(path, period_s))
    # The tools are the sampler's children, not the workload's: keep them out of its figures.
    procfs = ProcfsSource(root_pid, exclude=lambda: [pid for tool in tools for pid in tool.pids()])
    return tools + [procfs]


def merge(readings: List[Tuple[str, Dict[str, Any]]], period_s: float) -> Dict[str, Any]:
    """One ``sample`` payload from the sources' readings, device sources first.

    Host figures come from the first source that has them (neuron-monitor's
    match neuron-top; /proc fills any gap).  A reason stays in ``missing`` only
    while its figure is still null after the merge.
    """
    host = dict.fromkeys(HOST_KEYS)  # type: Dict[str, Any]
    devices = []  # type: List[Dict[str, Any]]
    merged = {"runtime": None, "process": None}  # type: Dict[str, Any]
    missing = {}  # type: Dict[str, str]
    device_sources = [name for name, reading in readings if name != ProcfsSource.name]
    processes = None
    workload = None  # type: Optional[List[int]]
    for _, reading in readings:
        for key in HOST_KEYS:
            value = (reading.get("host") or {}).get(key)
            if host[key] is None and value is not None:
                host[key] = value
        devices.extend(reading.get("devices") or [])
        for key in ("runtime", "process"):
            if merged[key] is None and reading.get(key) is not None:
                merged[key] = reading[key]
        if processes is None and reading.get("processes") is not None:
            processes = reading["processes"]
        if workload is None and reading.get("workload_pids") is not None:
            workload = reading["workload_pids"]
        for key, why in (reading.get("missing") or {}).items():
            if key not in missing:
                missing[key] = why
            elif why not in missing[key]:
                missing[key] += "; " + why
    for key in [k for k in missing if k.startswith("host.")]:
        if host.get(key[5:]) is not None:
            del missing[key]  # another source had it
    if not device_sources:
        # A CPU-only host: the CPU is the device the workload runs on.
        devices = [{"index": 0, "kind": "cpu", "util_pct": host["cpu_pct"], "mem_used": host["mem_used"],
                    "mem_total": host["mem_total"]}]
        for key, host_key in (("util_pct", "cpu_pct"), ("mem_used", "mem_used"), ("mem_total", "mem_total")):
            if host[host_key] is None:
                missing["devices.0." + key] = missing.get("host." + host_key, "not read")
    if "neuron-monitor" not in device_sources:
        missing["runtime"] = "neuron-monitor is not installed on this host (%s or PATH)" % NEURON_BIN_DIR
    sample = {"source": next((n for n, r in readings if r.get("devices")), ProcfsSource.name),
              "sources": [name for name, _ in readings], "period_s": period_s, "host": host, "devices": devices,
              "runtime": merged["runtime"], "process": merged["process"], "missing": missing}
    if processes is not None:
        if workload is not None:
            # Each runtime neuron-monitor lists is this run's (a process of the workload's tree) or another's:
            # a NeuronCore busy with someone else's job is not this run's utilisation.
            mine = set(workload)
            processes = [dict(row, run=row.get("pid") in mine) for row in processes]
        sample["processes"] = processes
    return sample


class Sampler:
    """Reads ``sources`` every ``period_s`` on a thread of its own and hands each sample to ``emit(t, payload)``.

    ``emit`` raising (the stdout reader went away) stops the sampling;
    ``failure`` then holds the exception.
    """

    def __init__(self, sources: List[Any], period_s: float, emit: Emit) -> None:
        self.sources = sources
        self.period_s = float(period_s)
        self.emit = emit
        self.count = 0
        self.failure = None  # type: Optional[BaseException]
        self._broken = {}  # type: Dict[str, str]
        self._stop = threading.Event()
        self._last_tick = 0.0
        self._thread = threading.Thread(target=self._loop, name="telemetry-sampler", daemon=True)

    @property
    def names(self) -> List[str]:
        return [source.name for source in self.sources]

    def start(self) -> None:
        """Start the tools (call from a long-lived thread: see ToolStream) and the sampling thread."""
        for source in self.sources:
            try:
                source.start()
            except OSError as exc:
                self._broken[source.name] = "%s could not be started: %s" % (source.name, exc)
        self._thread.start()

    def _readings(self) -> List[Tuple[str, Dict[str, Any]]]:
        readings = []
        for source in self.sources:
            why = self._broken.get(source.name)
            if why is None:
                try:
                    readings.append((source.name, source.read()))
                    continue
                except Exception as exc:  # a format we did not foresee must not end the run's telemetry
                    why = "reading %s failed: %s: %s" % (source.name, type(exc).__name__, exc)
            # What this source would have given is null, with the reason.
            keys = ["host." + key for key in HOST_KEYS] + ["process"] if source.name == ProcfsSource.name \
                else ["devices"]
            readings.append((source.name, {"missing": dict.fromkeys(keys, why)}))
        return readings

    def sample(self, period_s: Optional[float] = None) -> Dict[str, Any]:
        """Read every source now and merge the readings (what each tick emits)."""
        return merge(self._readings(), self.period_s if period_s is None else period_s)

    def _emit(self, period_s: float) -> bool:
        stamp, self._last_tick = time.time(), time.monotonic()
        try:
            self.emit(stamp, self.sample(period_s))
        except Exception as exc:
            self.failure = exc
            return False
        self.count += 1
        return True

    def _loop(self) -> None:
        origin = self._last_tick = time.monotonic()
        tick = 1
        while not self._stop.wait(max(0.0, origin + tick * self.period_s - time.monotonic())):
            if not self._emit(self.period_s):
                return
            tick = next_tick(tick, time.monotonic() - origin, self.period_s)

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until sampling has stopped (emit failed, or ``stop``); True if it has."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def stop(self, final_sample: bool = False) -> None:
        """Stop sampling and the tools; idempotent.

        Args:
            final_sample: first emit one more sample covering the time since the last tick (its
                ``period_s`` says how long), so a run's timeline reaches the end of its workload.
        """
        running = self._thread.is_alive()
        self._stop.set()
        if running:
            self._thread.join()
            since = time.monotonic() - self._last_tick
            # A sliver of a period would give CPU shares of a handful of clock ticks: not worth a sample.
            if final_sample and self.failure is None and since >= FINAL_SAMPLE_MIN * self.period_s:
                self._emit(round(since, 6))
        for source in self.sources:
            source.stop()
