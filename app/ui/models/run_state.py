"""One live run as data: protocol events in, ring buffers and figures out (no Qt).

The bridge hands each event to ``LiveRunState.apply`` on the UI thread (cheap:
appends only); the view redraws from these buffers on its own timer and uses
``version`` to skip runs that did not change.  Times are seconds since the
run's ``hello``, on the host's clock, so no clock skew between app and host
shows up on the charts.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.core.model_text import where_text
from app.core.progress import ProgressTracker
from app.core.quoting import clean
from app.ui.models.ring import Ring
from app.ui.models.sweep import Sweep

STEP_CAPACITY = 20_000      # a 20k-step run is drawn whole; longer ones keep their latest steps
SERIES_CAPACITY = 7_200     # 2 h of 1 Hz telemetry or latency windows
HEAT_CAPACITY = 1_800       # 30 min of the per-core heat strip
LOG_CAPACITY = 5_000      # lines held for a view that has not drawn them yet
LOG_LINE_LIMIT = 2_000    # characters of one log line (a host's compiler line, an error message)
PHASE_CAPACITY = 200      # a sweep of 50 batch sizes; looped replays drop their oldest
GIB = 1024 ** 3
BAND_PHASES = ("setup", "compile", "warmup", "measure")
GEN_MEASURE = 2.0  # gen_calls' stage code of a timed call

Event = dict[str, Any]


def _lengths(event: Event) -> tuple[int, int] | None:
    """A generate event's (prompt tokens, new tokens), or None."""
    if event.get("input_len") is None or event.get("output_len") is None:
        return None
    return int(event["input_len"]), int(event["output_len"])


def missing_reason(missing: dict[str, str], prefix: str, default: str) -> str:
    """The reason a sample gave for a metric under ``prefix`` (``devices``, ``host.cpu_pct``...) being null."""
    for key in sorted(missing):
        if key == prefix or key.startswith(prefix + "."):
            return missing[key]
    return default


@dataclass
class PhaseSpan:
    name: str
    start: float
    end: float | None = None
    batch_size: int | None = None
    seq_len: int | None = None  # a text model's sweep: one artefact per batch size and length
    lengths: tuple[int, int] | None = None  # generate: (prompt tokens, new tokens) of the sweep point


@dataclass
class DeviceNow:
    """A device's latest sample; None is "not measured" (shown as N/A), never zero."""

    index: int
    kind: str
    util_pct: float | None
    mem_used: int | None
    mem_total: int | None


@dataclass
class HostNow:
    """The host's latest CPU and memory figures; ``vcpu_pct`` is None from an agent that sends no per-vCPU list."""

    cpu_pct: float | None
    vcpu_pct: list[float | None] | None
    mem_used: int | None
    mem_total: int | None


def utilisation_cores(devices: list[DeviceNow], host: HostNow) -> list[DeviceNow]:
    """What the utilisation charts show: the NeuronCores or GPUs, or on a CPU-only host every vCPU.

    A CPU host's one ``cpu`` device is the whole host; its vCPUs come from ``cpu_per_core_pct``.
    An older agent sends no such list: the host's total then stands alone, as it did.
    """
    if devices and all(d.kind == "cpu" for d in devices) and host.vcpu_pct:
        return [DeviceNow(i, "vcpu", pct, None, None) for i, pct in enumerate(host.vcpu_pct)]
    return devices


class LiveRunState:
    """Everything one run's view draws, built from its events."""

    def __init__(self, host: str, spec: Any, node: int | None = None) -> None:
        self.host = host
        self.spec = spec
        # One node of a multi-node run: its own events (tagged ``node``) and the run's end; node 0's
        # view also takes the run's untagged events.  None: a run on one host (every event).
        self.node = node
        self.run_id: str | None = None
        self.t0: float | None = None
        self.last_t = 0.0
        self.status = "starting"          # starting, running, ok, failed, cancelled, detached
        self.activity = "starting the agent"
        self.env: dict[str, Any] | None = None
        self.result: dict[str, Any] | None = None
        self.error: dict[str, Any] | None = None
        self.events_seen = 0
        self.refused = 0  # the agent's lines protocol v1 refused (left out; the session says why in the log)
        self.version = 0
        self.progress = ProgressTracker(spec)
        self.phases: deque[PhaseSpan] = deque(maxlen=PHASE_CAPACITY)
        # steps: t, dt_s, rolling median dt and throughput (NaN outside the steady window), compiled 0/1
        self.steps = Ring(STEP_CAPACITY, 5)
        self.compiled_steps = Ring(1_000, 2)          # t, dt_s of steps that compiled a graph
        # t, batch size, p50, p90, p99 (ms), sequence length (0: none): one series per (batch, length)
        self.latency = Ring(SERIES_CAPACITY, 6)
        self.sweep = Sweep(spec)                      # its rows: figures and the numerical check per artefact
        self.tokens_per_sample: float | None = None   # a text model's training steps say (``tokens``)
        self.infer_throughput = Ring(SERIES_CAPACITY, 2)   # t, samples/s over the latency window (generate: output
        # tok/s of each call)
        # generate: t, TTFT ms, TPOT ms, decode ms, output tok/s, stage (0 first, 1 warm-up, 2 timed): one per call
        self.gen_calls = Ring(STEP_CAPACITY, 6)
        self.serve_levels: list[dict[str, Any]] = []  # serve: each load level's figures, as it ends
        self.host_series = Ring(SERIES_CAPACITY, 4)   # t, cpu %, memory used %, memory used GiB
        self.heat: Ring | None = None                 # t, then one util % column per core (``cores``)
        self.devices: list[DeviceNow] = []
        self.host_now: HostNow | None = None
        self.cores: list[DeviceNow] = []              # the utilisation charts' rows: devices, or vCPUs
        self.samples_seen = 0
        self.sample_source: str | None = None
        self.missing: dict[str, str] = {}
        # Lines not yet handed to the view's log pane (which keeps the last ones it shows).
        self._new_logs: list[tuple[float, str, str]] = []
        self._last_latency_t: float | None = None
        # --target-ci's interval as it shrinks, and what live MFU needs (from the setup phase's end event).
        self.ci_pct: float | None = None
        self.compute: dict[str, Any] = {}

    # ------------------------------------------------------------------ input
    def wants(self, event: Event) -> bool:
        """Whether this view shows ``event`` (a multi-node run's stream carries every node's)."""
        if self.node is None:
            return True
        tagged = event.get("node")
        if tagged is None:
            # The run's own events go to node 0's view; what Slurm says of the job (queued, running) to every node's.
            return self.node == 0 or event["type"] in ("result", "end") or "slurm_state" in event
        return tagged == self.node

    def apply(self, event: Event) -> None:
        """Take one validated protocol event."""
        if not self.wants(event):
            return
        if self.t0 is None:
            self.t0 = float(event["t"])
        self.last_t = max(self.last_t, self._rel(event["t"]))
        self.events_seen += 1
        self.version += 1
        self.progress.update(event)
        handler = getattr(self, "_on_" + event["type"], None)
        if handler is not None:
            handler(event)

    def mark(self, status: str, activity: str) -> None:
        """A status the app knows and the stream does not (detached, or the agent never answered)."""
        self.status, self.activity = status, activity
        self.version += 1

    def fail(self, message: str, detail: str = "", kind: str = "internal") -> None:
        """The run failed outside the stream (the agent died, the host dropped): keep what was received."""
        self.error = {"kind": kind, "message": message, "detail": detail}
        self._log(self.last_t, "error", message)
        self.mark("failed", "failed")

    def note(self, level: str, message: str) -> None:
        """A line for the log from the app itself (a cancel that failed, a detach)."""
        self._log(self.last_t, level, message)
        self.version += 1

    def take_result(self, result: dict[str, Any]) -> None:
        """The Result as the app recorded it (priced), which replaces the one the stream carried."""
        self.result = result
        self.version += 1

    def take_new_logs(self) -> list[tuple[float, str, str]]:
        new, self._new_logs = self._new_logs, []
        return new

    # ---------------------------------------------------------------- events
    def _rel(self, t: float) -> float:
        return float(t) - (self.t0 or 0.0)

    def _log(self, t: float, level: str, message: str) -> None:
        # A host's text, shown as it came but never with the control characters that reorder or hide it.
        self._new_logs.append((t, clean(level, 20), clean(message, LOG_LINE_LIMIT)))
        if len(self._new_logs) > LOG_CAPACITY:
            del self._new_logs[: len(self._new_logs) - LOG_CAPACITY]

    def _on_hello(self, event: Event) -> None:
        self.run_id = event.get("run_id") or self.run_id
        self.status, self.activity = "running", "setting up"
        self._log(0.0, "info", f"agent {event['agent_version']} (Python {event['python']}) started run "
                               f"{self.run_id}")

    def _on_probe(self, event: Event) -> None:
        self.env = event.get("env") or {}
        for warning in self.env.get("warnings") or []:
            self._log(self._rel(event["t"]), "warning", warning)

    def _on_phase(self, event: Event) -> None:
        self.sweep.on_phase(event)
        name, t, size = event["name"], self._rel(event["t"]), event.get("batch_size")
        if event["state"] == "start":
            if name in BAND_PHASES:
                self.phases.append(PhaseSpan(name, t, None, size, event.get("seq_len"), _lengths(event)))
            if name == "measure":
                self._last_latency_t = None  # a new batch size: its first window starts here
                if len(self.latency):  # and its curves start afresh: a gap, not a line from the last size
                    self.latency.append(t, size, None, None, None, event.get("seq_len") or 0)
                    self.infer_throughput.append(t, None)
                if len(self.gen_calls):  # generate: a new sweep point's calls start a new line
                    self.gen_calls.append(t, None, None, None, None, GEN_MEASURE)
                    self.infer_throughput.append(t, None)
            label = {"warmup": "warming up", "measure": "measuring", "compile": "compiling",
                     "setup": "setting up", "teardown": "finishing"}.get(name, clean(name, 40))
            where = where_text(size, event.get("seq_len"))
            if _lengths(event):
                where += f", {event['input_len']} in / {event['output_len']} out"
            self.activity = label + (f" ({where})" if size is not None else "")
            return
        if name == "setup" and "flops_per_sample" in event:
            self.compute = {k: event.get(k) for k in ("flops_per_sample", "matmul_dtype", "backend", "devices")}
            self.ci_pct = None  # a new batch size's interval starts afresh
        for span in reversed(self.phases):
            # A length left to the model's default is named from setup's end on: a span without one matches.
            if span.name == name and span.end is None and span.batch_size == size and \
                    span.seq_len in (None, event.get("seq_len")) and span.lengths == _lengths(event):
                span.end = t
                break
        if name == "compile" and "seconds" in event:
            batch = f" batch {size}" if size is not None else ""
            self._log(t, "info", f"compiled{batch} in {event['seconds']:.2f} s")

    def _on_step(self, event: Event) -> None:
        t, dt = self._rel(event["t"]), float(event["dt_s"])
        self.ci_pct = event.get("ci_pct", self.ci_pct)
        if event.get("compiled"):
            self.compiled_steps.append(t, dt)
            self._log(t, "info", f"step {event['i']} compiled a graph ({dt:.2f} s, kept out of the figures)")
        # The tracker has taken this step: its steady window (warm-up and compiles left out) gives both
        # rolling figures, so the throughput is flat when the step time is, and ends on the Result's.
        window = self.progress.steady
        median, throughput = (window.median_step_s, window.throughput) if self.progress.step_steady else (None, None)
        self.steps.append(t, dt, median, throughput, 1.0 if event.get("compiled") else 0.0)
        if event.get("tokens") and event.get("samples"):
            self.tokens_per_sample = float(event["tokens"]) / float(event["samples"])

    def _on_latency(self, event: Event) -> None:
        t = self._rel(event["t"])
        self.ci_pct = event.get("ci_pct", self.ci_pct)
        self.latency.append(t, event["batch_size"], event["p50_ms"], event["p90_ms"], event["p99_ms"],
                            event.get("seq_len") or 0)
        start = self._last_latency_t
        if start is None:
            measure = next((s for s in reversed(self.phases) if s.name == "measure"), None)
            start = measure.start if measure is not None else None
        rate = event["count"] * event["batch_size"] / (t - start) if start is not None and t > start else None
        if rate is not None:
            self.infer_throughput.append(t, rate)
        self.sweep.on_latency(event, rate)
        self._last_latency_t = t

    def _on_serve_level(self, event: Event) -> None:
        self.serve_levels.append(dict(event["level"]))

    def _on_gen_call(self, event: Event) -> None:
        t = self._rel(event["t"])
        self.ci_pct = event.get("ci_pct", self.ci_pct)
        stage = {"first": 0.0, "warmup": 1.0}.get(event.get("stage"), GEN_MEASURE)
        self.gen_calls.append(t, event.get("ttft_ms"), event.get("tpot_ms"), event.get("decode_ms"),
                              event.get("output_tok_s"), stage)
        if stage == GEN_MEASURE and event.get("output_tok_s") is not None:
            self.infer_throughput.append(t, event["output_tok_s"])
        self.sweep.on_gen_call(event)

    def _on_sample(self, event: Event) -> None:
        t = self._rel(event["t"])
        self.samples_seen += 1
        self.sample_source = event.get("source")
        self.missing = dict(event.get("missing") or {})
        host = event.get("host") or {}
        used, total = host.get("mem_used"), host.get("mem_total")
        mem_pct = 100.0 * used / total if used is not None and total else None
        self.host_series.append(t, host.get("cpu_pct"), mem_pct, None if used is None else used / GIB)
        vcpus = host.get("cpu_per_core_pct")
        self.host_now = HostNow(host.get("cpu_pct"), list(vcpus) if isinstance(vcpus, list) else None, used, total)
        devices = sorted(event.get("devices") or [], key=lambda d: d.get("index", 0))
        self.devices = [DeviceNow(int(d.get("index", i)), str(d.get("kind", "?")), d.get("util_pct"),
                                  d.get("mem_used"), d.get("mem_total")) for i, d in enumerate(devices)]
        self.cores = utilisation_cores(self.devices, self.host_now)
        if self.cores:
            if self.heat is None or self.heat.width != len(self.cores) + 1:
                # float32: percentages and seconds since the start need no more, and 192 vCPUs x 30 min
                # of float64 would hold 2.8 MB a view.  The core count changed: start over.
                self.heat = Ring(HEAT_CAPACITY, len(self.cores) + 1, np.float32)
            self.heat.append(t, *[c.util_pct for c in self.cores])

    def _on_log(self, event: Event) -> None:
        self.sweep.on_log(event)
        self._log(self._rel(event["t"]), str(event.get("level", "info")), str(event.get("message", "")))
        if event.get("slurm_state") and not self.phases:
            self.activity = f"Slurm: {event['slurm_state']}"  # e.g. "Slurm: queued (Resources)" until it starts

    def _on_error(self, event: Event) -> None:
        self.error = {"kind": event.get("kind"), "message": event.get("message"), "detail": event.get("detail", "")}
        self._log(self._rel(event["t"]), "error", f"{event.get('kind')}: {event.get('message')}")

    def _on_result(self, event: Event) -> None:
        self.result = event.get("result")
        self.sweep.on_result(self.result or {})

    def _on_end(self, event: Event) -> None:
        self.status = str(event.get("status"))
        self.activity = {"ok": "finished", "failed": "failed", "cancelled": "cancelled",
                         "partial": "finished, partly"}.get(self.status, self.status)
        self._log(self._rel(event["t"]), "info", f"run {self.status}")

    # ---------------------------------------------------------------- figures
    @property
    def finished(self) -> bool:
        return self.status in ("ok", "partial", "failed", "cancelled", "detached")

    @property
    def cpu_host(self) -> bool:
        """The host has no NeuronCore or GPU: the CPU is the device (from the latest sample)."""
        return bool(self.devices) and all(d.kind == "cpu" for d in self.devices)

    @property
    def device_kind(self) -> str:
        kinds = {d.kind for d in self.devices}
        return kinds.pop() if len(kinds) == 1 else "device"

    def latest_step_median(self) -> float | None:
        last = self.steps.last()
        return None if last is None or np.isnan(last[2]) else float(last[2])

    def latest_throughput(self) -> float | None:
        ring = self.steps if self.spec.workload == "train" else self.infer_throughput
        last = ring.last()
        if last is None:
            return None
        value = last[3] if self.spec.workload == "train" else last[1]
        return None if np.isnan(value) else float(value)

    def latest_tokens_per_s(self) -> float | None:
        """Tokens/s beside the latest samples/s, for a text model (None for images)."""
        throughput = self.latest_throughput()
        if throughput is None:
            return None
        if self.spec.workload == "train":
            return throughput * self.tokens_per_sample if self.tokens_per_sample else None
        last = self.latency.last()
        return throughput * float(last[5]) if last is not None and last[5] > 0 else None

    def latest_latency(self) -> tuple[float, float, float] | None:
        last = self.latency.last()
        if last is None or np.isnan(last[2]):
            return None
        return float(last[2]), float(last[3]), float(last[4])

    def latest_host(self) -> tuple[float | None, float | None]:
        last = self.host_series.last()
        if last is None:
            return None, None
        return (None if np.isnan(last[1]) else float(last[1]), None if np.isnan(last[2]) else float(last[2]))
