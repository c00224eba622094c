"""NeuronCore telemetry from ``neuron-monitor``: one JSON report per line, mapped to sample parts.

``map_report`` is pure and is tested on the recorded reports in tests/data/neuron/
(their README lists the format's pitfalls); ``NeuronMonitorSource`` runs the tool
and keeps the newest mapped report.

What a report holds, and how it is read here:

- ``neuron_runtime_data``: one entry per process using the Neuron runtime (a
  torchrun worker each), with its own metric groups.  Core keys are *global* core
  indices as strings.  A runtime may list every core of the host, the ones it does
  not use at zero (a trn1.32xlarge with 32 workers lists 32 cores under each of its
  32 runtimes): a core is as busy as the runtimes that use it say, so the runtimes
  are merged per core, never by taking the first runtime that lists it.
- ``system_data``: host vCPU usage and memory.
- ``neuron_hardware_info``: device count, cores per device, device memory: the full
  list of cores, so that cores no runtime holds show as idle (0 %), like neuron-top.

Every metric group may be absent (the first report after start-up has only
``memory_info``) or carry an ``error`` string; the metrics it would give are then
null, with the reason in ``missing``.
"""
from __future__ import annotations

import json
import os
import pkgutil
import tempfile
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from remote_agent.monitor.toolstream import ToolStream

SOURCE = "neuron-monitor"
CONFIG_RESOURCE = "neuron-monitor.json"
# neuroncore_memory_usage's breakdown of one core's device memory; their sum is what the
# runtime reports as its neuron_device total (an invariant of the real captures).
CORE_MEMORY_FIELDS = ("constants", "model_code", "model_shared_scratchpad", "runtime_memory", "tensors")
ERROR_KINDS = ("generic", "numerical", "transient", "model", "runtime", "hardware")
NO_RUNTIME = "no Neuron runtime is running (no process holds a NeuronCore)"
NO_EXECUTION = "no execution completed in this period"

Reading = Dict[str, Any]


# --------------------------------------------------------------------------- mapping (pure)

def _number(value: Any) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _int(value: Any) -> Optional[int]:
    number = _number(value)
    return int(number) if number is not None else None


def _core_index(key: Any) -> Optional[int]:
    """Core keys are strings ("0", "1", ...): global NeuronCore indices."""
    if type(key) is str and key.isdigit():  # the usual key, first: 2,048 of them a trn1.32xlarge report
        return int(key)
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and key.strip().isdigit():
        return int(key.strip())
    return None


def _group(container: Any, name: str, where: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """A metric group, or None and the reason it cannot be used."""
    group = container.get(name) if isinstance(container, dict) else None
    if group is None:
        return None, "neuron-monitor's report has no %s.%s group" % (where, name)
    if not isinstance(group, dict):
        return None, "neuron-monitor's %s.%s is not an object" % (where, name)
    error = group.get("error")
    if isinstance(error, str) and error.strip():
        return None, "neuron-monitor could not read %s: %s" % (name, error.strip())
    return group, None


BUSY_FIELDS = ("user", "nice", "system", "irq", "soft_irq")
COUNTER_FIELDS = ("neuroncore_utilization", "flops", "effective_flops")


def _any_positive(values: Optional[Dict[str, Any]], keys: Tuple[str, ...]) -> bool:
    if values is None:
        return False
    for key in keys:
        value = values.get(key)
        # 0 (an idle core's every figure) is out at the first test; bool is an int, but not a figure.
        if value and type(value) in (int, float) and value > 0:
            return True
    return False


def _busy_pct(usage: Any) -> Optional[float]:
    """Busy share of a vCPU usage breakdown: its parts other than idle and I/O wait (as /proc/stat is read)."""
    if not isinstance(usage, dict):
        return None
    parts = [_number(usage.get(name)) for name in BUSY_FIELDS]
    if all(p is None for p in parts):
        return None
    return min(100.0, sum(p for p in parts if p is not None))


def _host(system: Any, missing: Dict[str, str]) -> Dict[str, Any]:
    host = {"cpu_pct": None, "cpu_per_core_pct": None, "mem_used": None, "mem_total": None}  # type: Dict[str, Any]
    vcpu, why = _group(system, "vcpu_usage", "system_data")
    if vcpu is not None:
        host["cpu_pct"] = _busy_pct(vcpu.get("average_usage"))
        per_core = vcpu.get("usage_data")
        if isinstance(per_core, dict):
            ordered = sorted((i, v) for i, v in ((_core_index(k), v) for k, v in per_core.items()) if i is not None)
            host["cpu_per_core_pct"] = [_busy_pct(v) for _, v in ordered]
        why = "neuron-monitor's vcpu_usage has no usable average_usage/usage_data"
    for key in ("cpu_pct", "cpu_per_core_pct"):
        if host[key] is None:
            missing["host." + key] = why or ""
    memory, why = _group(system, "memory_info", "system_data")
    if memory is not None:
        host["mem_used"] = _int(memory.get("memory_used_bytes"))
        host["mem_total"] = _int(memory.get("memory_total_bytes"))
        why = "neuron-monitor's memory_info lacks memory_used_bytes/memory_total_bytes"
    for key in ("mem_used", "mem_total"):
        if host[key] is None:
            missing["host." + key] = why or ""
    return host


class _Runtime:
    """What one runtime (one process) reports, with a reason for each group it lacks."""

    def __init__(self, entry: Dict[str, Any]) -> None:
        self.pid = _int(entry.get("pid"))
        report = entry.get("report")
        error = entry.get("error")
        failed = "neuron-monitor could not read runtime %s: %s" % (self.pid, error.strip()) \
            if isinstance(error, str) and error.strip() else None
        where = "runtime %s" % self.pid

        def group(name: str) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
            return (None, failed) if failed else _group(report, name, where)

        self.counters, self.counters_why = group("neuroncore_counters")
        self.memory, self.memory_why = group("memory_used")
        self.stats, self.stats_why = group("execution_stats")
        self.vcpu, self.vcpu_why = group("neuron_runtime_vcpu_usage")
        self.core_use = self._keyed(self.counters, "neuroncores_in_use")
        used = (self.memory or {}).get("neuron_runtime_used_bytes")
        self.used = used if isinstance(used, dict) else {}
        breakdown = self.used.get("usage_breakdown")
        self.core_memory = self._keyed(breakdown if isinstance(breakdown, dict) else None, "neuroncore_memory_usage")

    @staticmethod
    def _keyed(container: Optional[Dict[str, Any]], name: str) -> Dict[int, Dict[str, Any]]:
        raw = container.get(name) if container else None
        out = {}
        for key, value in (raw.items() if isinstance(raw, dict) else ()):
            index = _core_index(key)
            if index is not None and isinstance(value, dict):
                out[index] = value
        return out

    @property
    def listed(self) -> List[int]:
        return sorted(set(self.core_use) | set(self.core_memory))

    def core_figures(self, core: int) -> Dict[str, Optional[float]]:
        """This runtime's utilisation, FLOPS and device memory on ``core`` (None: not reported)."""
        use = self.core_use.get(core)
        util = flops = None  # type: Optional[float]
        if use is not None:
            util = _number(use.get("neuroncore_utilization"))
            # Recent runtimes write effective_flops instead of the documented flops.
            flops = _number(use["flops"] if "flops" in use else use.get("effective_flops"))
        memory = self.core_memory.get(core)
        mem = _core_memory_bytes(memory) if memory is not None else None
        return {"util_pct": util, "flops": flops, "mem_used": mem}

    def uses(self, core: int) -> bool:
        """Whether this runtime reports any activity on ``core``: utilisation, FLOPS or memory above zero.

        Asked of every core of every runtime (32 x 32 on a trn1.32xlarge each period): it reads
        the raw numbers instead of building ``core_figures``.
        """
        return _any_positive(self.core_use.get(core), COUNTER_FIELDS) or \
            _any_positive(self.core_memory.get(core), CORE_MEMORY_FIELDS)

    def cores(self, host_cores: int) -> List[int]:
        """The cores this runtime uses: those where it reports activity.

        A runtime that lists only some cores names its own (an older runtime, or a report of one
        worker per core that lists each core once) even while they are still at zero; one that
        lists every core of the host (``host_cores``; 0 when unknown) and is idle on all uses none
        that can be told.
        """
        used = [core for core in self.listed if self.uses(core)]
        if used or (host_cores and len(self.listed) >= host_cores):
            return used
        return self.listed

    def completed(self) -> Optional[int]:
        summary = (self.stats or {}).get("execution_summary")
        return _int(summary.get("completed")) if isinstance(summary, dict) else None

    def errors_by_kind(self) -> Optional[Dict[str, int]]:
        summary = (self.stats or {}).get("error_summary")
        if not isinstance(summary, dict):
            return None
        return {kind: _int(summary.get(kind)) or 0 for kind in ERROR_KINDS}

    def latency(self, which: str, percentile: str) -> Optional[float]:
        stats = (self.stats or {}).get("latency_stats")
        block = stats.get(which) if isinstance(stats, dict) else None
        # Null when nothing ran in the period (the docs: "the two objects will be null").
        return _number(block.get(percentile)) if isinstance(block, dict) else None

    def vcpu_pct(self) -> Optional[float]:
        usage = (self.vcpu or {}).get("vcpu_usage")
        if not isinstance(usage, dict):
            return None
        user, system = _number(usage.get("user")), _number(usage.get("system"))
        return None if user is None and system is None else (user or 0.0) + (system or 0.0)

    def describe(self, cores: List[int]) -> Dict[str, Any]:
        """One row of neuron-top's per-application view (``cores``: the ones it uses)."""
        errors = self.errors_by_kind()
        return {"pid": self.pid, "cores": cores, "completed": self.completed(),
                "errors": sum(errors.values()) if errors is not None else None,
                "latency_p50_s": self.latency("total_latency", "p50"),
                "latency_p99_s": self.latency("total_latency", "p99"),
                "device_mem": _int(self.used.get("neuron_device")), "host_mem": _int(self.used.get("host")),
                "cpu_pct": self.vcpu_pct()}


def _core_memory_bytes(breakdown: Dict[str, Any]) -> Optional[int]:
    parts = [_int(breakdown.get(name)) for name in CORE_MEMORY_FIELDS]
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def _hardware(report: Dict[str, Any], missing: Dict[str, str]) -> Tuple[List[int], Optional[int], Optional[int]]:
    """(every core index, cores per device, memory per core) from neuron_hardware_info."""
    info, why = _group(report, "neuron_hardware_info", "report")
    if info is None:
        missing["devices"] = "%s: only the cores a runtime reports are listed" % why
        return [], None, None
    devices, per_device = _int(info.get("neuron_device_count")), _int(info.get("neuroncore_per_device_count"))
    memory = _int(info.get("neuron_device_memory_size"))
    if not devices or not per_device:
        missing["devices"] = "neuron-monitor's neuron_hardware_info has no device/core counts"
        return [], per_device or None, None
    # neuroncore_per_device_count counts the cores the tools index (logical cores under
    # LNC=2 on Trn2, as neuron-ls's nc_count does), so core c sits on device c // per_device.
    return list(range(devices * per_device)), per_device, (memory // per_device if memory else None)


def _merge_core(entry: Dict[str, Any], path: str, figures: List[Tuple[_Runtime, Dict[str, Optional[float]]]],
                missing: Dict[str, str]) -> None:
    """A core's figures from the runtimes that use it: their sum (utilisation at most 100 %).

    One runtime per core is the rule (NeuronCores are exclusive per process); should two report
    activity on one core, their figures add up.  A figure one of them lacks is unknown.
    """
    for key in ("util_pct", "flops", "mem_used"):
        lacking = [rt for rt, values in figures if values[key] is None]
        if lacking:
            rt = lacking[0]
            why = rt.memory_why if key == "mem_used" else rt.counters_why
            missing[path + key] = why or "runtime %s reports no %s for this core" % (
                rt.pid, "memory" if key == "mem_used" else key)
            continue
        total = sum(values[key] or 0.0 for _, values in figures)
        entry[key] = int(total) if key == "mem_used" else (min(100.0, total) if key == "util_pct" else total)


def _merge_latency(runtimes: List[_Runtime], percentile: str) -> Optional[float]:
    """Percentiles of several runtimes cannot be merged exactly: p50 is their mean weighted by
    completed executions, p99 the worst runtime's (an upper bound of the merged p99)."""
    pairs = [(rt.latency("total_latency", percentile), rt.completed() or 0) for rt in runtimes]
    pairs = [(value, count) for value, count in pairs if value is not None and count > 0]
    if not pairs:
        return None
    if percentile == "p99":
        return max(value for value, _ in pairs)
    return sum(value * count for value, count in pairs) / sum(count for _, count in pairs)


def _runtime_block(runtimes: List[_Runtime], missing: Dict[str, str]) -> Optional[Dict[str, Any]]:
    if not runtimes:
        missing["runtime"] = NO_RUNTIME
        return None
    failed = next((rt.stats_why for rt in runtimes if rt.stats is None), None)
    block = {"completed": None, "errors": None, "errors_by_kind": None,
             "latency_p50_s": None, "latency_p99_s": None}  # type: Dict[str, Any]
    if failed:
        # A sum over some runtimes would pass for the whole: say none rather than a part.
        for key in block:
            missing["runtime." + key] = failed
        return block
    counts = [rt.completed() for rt in runtimes]
    block["completed"] = sum(c for c in counts if c is not None) if any(c is not None for c in counts) else None
    kinds = [rt.errors_by_kind() for rt in runtimes]
    if all(k is not None for k in kinds):
        block["errors_by_kind"] = {kind: sum(k[kind] for k in kinds if k) for kind in ERROR_KINDS}
        block["errors"] = sum(block["errors_by_kind"].values())
    block["latency_p50_s"] = _merge_latency(runtimes, "p50")
    block["latency_p99_s"] = _merge_latency(runtimes, "p99")
    for key, value in block.items():
        if value is None:
            missing["runtime." + key] = NO_EXECUTION if key.startswith("latency") and block["completed"] == 0 \
                else "neuron-monitor's execution_stats lack this figure"
    return block


def map_report(report: Dict[str, Any]) -> Reading:
    """Map one neuron-monitor report to the parts of a ``sample`` event.

    Args:
        report: one parsed line of neuron-monitor's stdout.

    Returns:
        ``{"host", "devices", "runtime", "processes", "missing"}``: devices are NeuronCores by global
        index (``device`` is the Neuron device holding the core), ``processes`` one row per runtime.
    """
    missing = {}  # type: Dict[str, str]
    system = report.get("system_data")
    host = _host(system if isinstance(system, dict) else {}, missing)
    raw = report.get("neuron_runtime_data")
    runtimes = [_Runtime(entry) for entry in (raw if isinstance(raw, list) else []) if isinstance(entry, dict)]
    all_cores, per_device, core_total = _hardware(report, missing)
    used = [rt.cores(len(all_cores)) for rt in runtimes]
    holders = {}  # type: Dict[int, List[_Runtime]]
    for rt, cores in zip(runtimes, used):
        for core in cores:
            holders.setdefault(core, []).append(rt)
    # A runtime whose groups failed may hold cores we cannot name: then no core is surely idle.
    blind = [rt for rt, cores in zip(runtimes, used) if not cores and (rt.counters is None or rt.memory is None)]
    listed = set(core for rt in runtimes for core in rt.listed)
    devices = []
    for core in sorted(set(all_cores) | listed):
        entry = {"index": core, "kind": "neuroncore", "device": core // per_device if per_device else None,
                 "util_pct": None, "mem_used": None, "mem_total": core_total, "flops": None}  # type: Dict[str, Any]
        path = "devices.%d." % core
        users = holders.get(core, [])
        if not users and blind:
            why = "runtime %s's cores are unknown (%s)" % (blind[0].pid, blind[0].counters_why or blind[0].memory_why)
            for key in ("util_pct", "mem_used", "flops"):
                missing[path + key] = why
        elif not users:
            entry.update(util_pct=0.0, mem_used=0, flops=0.0)  # no runtime uses it: idle, as neuron-top shows
        else:
            _merge_core(entry, path, [(rt, rt.core_figures(core)) for rt in users], missing)
        if entry["mem_total"] is None:
            missing[path + "mem_total"] = missing.get("devices", "neuron_hardware_info gives no device memory size")
        devices.append(entry)
    return {"host": host, "devices": devices, "runtime": _runtime_block(runtimes, missing),
            "processes": [rt.describe(cores) for rt, cores in zip(runtimes, used)], "missing": missing}


# --------------------------------------------------------------------------- the process

def period_text(period_s: float) -> str:
    """neuron-monitor's duration syntax: ``1s``, ``500ms``."""
    millis = int(round(period_s * 1000))
    return "%ds" % (millis // 1000) if millis % 1000 == 0 else "%dms" % millis


def write_config(period_s: float, path: Optional[str] = None) -> str:
    """Write the shipped config (every metric group) with ``period_s``; return its path.

    The template travels inside the agent (``remote_agent/monitor/neuron-monitor.json``);
    pkgutil reads it from the source tree and from the zipapp alike.  Without
    ``path`` the copy is a temporary file.
    """
    data = pkgutil.get_data(__name__, CONFIG_RESOURCE)
    if data is None:
        raise OSError("the agent lacks its %s template" % CONFIG_RESOURCE)
    config = json.loads(data.decode("utf-8"))
    config["period"] = period_text(period_s)
    if path is None:
        fd, path = tempfile.mkstemp(prefix="neuronbench-neuron-monitor-", suffix=".json")
        handle = os.fdopen(fd, "w")
    else:
        handle = open(path, "w")
    with handle:
        json.dump(config, handle, indent=1)
    return path


class NeuronMonitorSource:
    """Runs ``neuron-monitor -c CONFIG`` and keeps its newest report, mapped."""

    name = SOURCE

    def __init__(self, path: str, period_s: float, config_path: Optional[str] = None) -> None:
        self.period_s = period_s
        self._config_path = config_path
        self._temporary = config_path is None
        self._lock = threading.Lock()
        self._latest = None  # type: Optional[Reading]
        self._latest_at = 0.0
        self._bad_lines = 0
        self._commands = {}  # type: Dict[int, Optional[str]]
        self.stream = ToolStream(SOURCE, [path, "-c"], self._on_line)

    def start(self) -> None:
        self._config_path = write_config(self.period_s, self._config_path)
        self.stream.argv = self.stream.argv + [self._config_path]
        self.stream.start()

    def pids(self) -> List[int]:
        return self.stream.pids()

    def _on_line(self, line: bytes) -> bool:
        try:
            report = json.loads(line.decode("utf-8"))
        except ValueError:
            report = None
        reading = map_report(report) if isinstance(report, dict) else None
        if reading is not None:
            for row in reading["processes"]:
                row["command"] = self._command(row["pid"])
        with self._lock:
            if reading is None:
                self._bad_lines += 1
            else:
                self._latest, self._latest_at = reading, time.monotonic()
        return reading is not None

    def _command(self, pid: Optional[int]) -> Optional[str]:
        """The runtime process's command line (neuron-top shows it), cached: it does not change."""
        if pid is None:
            return None
        if pid not in self._commands:
            try:
                with open("/proc/%d/cmdline" % pid, "rb") as handle:
                    text = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            except OSError:
                text = ""
            if len(self._commands) > 1024:
                self._commands.clear()
            self._commands[pid] = text[:200] or None
        return self._commands[pid]

    def read(self) -> Reading:
        """The newest report, or no devices and the reason there is none."""
        with self._lock:
            latest, age, bad = self._latest, time.monotonic() - self._latest_at, self._bad_lines
        # neuron-monitor reports once a period: allow for a late one before calling it stale.
        fresh = latest is not None and age <= 3 * self.period_s + 2.0
        if fresh:
            return latest  # type: ignore[return-value]
        why = self.stream.exit_reason()
        if why is None:
            if latest is not None:
                why = "neuron-monitor has sent no report for %.0f s" % age
            elif bad:
                why = "neuron-monitor printed %d line(s) that are not JSON reports" % bad
            else:
                why = "waiting for neuron-monitor's first report"
        return {"devices": [], "missing": {"devices": why}}

    def stop(self) -> None:
        self.stream.stop()
        if self._temporary and self._config_path:
            try:
                os.unlink(self._config_path)
            except OSError:
                pass
