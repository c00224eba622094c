"""Live progress on stderr: phase lines and a redrawn bar with an ETA."""
from __future__ import annotations

import math
import sys
import threading
from typing import Any, TextIO

from app.core.clock_text import local_time_text
from app.core.model_text import where_text
from app.core.numbers import counted, figure
from app.core.progress import ProgressTracker
from app.core.quoting import clean
from app.core.target_ci import interval_text

BAR_WIDTH = 28
LINE_LIMIT = 1000  # characters of one progress line: a host's log line or error message is cut there


def _bar(fraction: float) -> str:
    filled = int(round(max(0.0, min(1.0, fraction)) * BAR_WIDTH))
    return "█" * filled + "░" * (BAR_WIDTH - filled)


def _eta(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):  # a step time past any clock gives no ETA, not a crash
        return "ETA --"
    seconds = int(round(seconds))
    return f"ETA {seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"ETA {seconds}s"


class ProgressPrinter:
    """Consumes protocol events for one run and draws its progress.

    On a terminal the bar is redrawn in place; elsewhere (CI logs, pipes) a
    plain line is printed at every tenth of the way, so logs stay readable.
    """

    def __init__(self, host: str, spec: Any, label: str = "", stream: TextIO | None = None) -> None:
        self.host = host
        self.spec = spec
        self.label = clean(f"{host}{label}")
        self.stream = stream or sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.tracker = ProgressTracker(spec)
        self._bar_shown = False
        self._last_decile = -1

    # ------------------------------------------------------------------ output
    def _line(self, text: str) -> None:
        if self._bar_shown:
            self.stream.write("\r\033[K")
            self._bar_shown = False
        # Text from the host (log lines, errors, names) with its control characters escaped: it never
        # drives the terminal, and this printer's own bar sequences are the only ones written.
        self.stream.write(f"[{self.label}] {clean(text, LINE_LIMIT)}\n")
        self.stream.flush()

    def _progress(self, fraction: float, text: str) -> None:
        if self.tty:
            self.stream.write(f"\r\033[K[{self.label}] {_bar(fraction)} {clean(text, LINE_LIMIT)}")
            self.stream.flush()
            self._bar_shown = True
            return
        decile = int(fraction * 10)
        if decile != self._last_decile:
            self._last_decile = decile
            self._line(f"{int(fraction * 100):3d}% {text}")

    def note(self, text: str) -> None:
        """A line that is not an event (connection lost, reconnected, agent uploaded)."""
        self._line(text)

    # ------------------------------------------------------------------ events
    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("node"):
            self._other_node(event)
            return
        self.tracker.update(event)
        handler = getattr(self, "_on_" + event["type"], None)
        if handler is not None:
            handler(event)

    def _other_node(self, event: dict[str, Any]) -> None:
        """An event of node 1, 2, ... of a multi-node run: its own lines, never the run's progress (node 0's)."""
        if event["type"] in ("probe", "error", "log"):
            label = self.label
            self.label = clean(f"{self.host} node {event['node']}")
            try:
                getattr(self, "_on_" + event["type"])(event)
            finally:
                self.label = label

    def _on_hello(self, event: dict[str, Any]) -> None:
        self._line(f"agent {event['agent_version']} (Python {event['python']}, pid {event['pid']}) "
                   f"run {event['run_id']}")

    def _on_probe(self, event: dict[str, Any]) -> None:
        env = event["env"] or {}
        cpu = (env.get("cpu") or {})
        devices = env.get("devices") or []
        kinds = ", ".join(sorted({d.get("kind") or "?" for d in devices})) or "no accelerator"
        self._line(f"host: {env.get('instance_type') or 'instance type unknown'}, {cpu.get('count')} CPUs, "
                   f"{kinds}, torch {env.get('torch') or 'missing'}")
        for warning in env.get("warnings") or []:
            self._line(f"warning: {warning}")

    def _on_phase(self, event: dict[str, Any]) -> None:
        shape = where_text(event["batch_size"], event.get("seq_len")) if event.get("batch_size") is not None else ""
        size = f" ({shape})" if shape else ""
        if event["state"] == "start" and event["name"] in ("compile", "warmup", "measure"):
            if self.spec.workload == "infer" or event["name"] != "compile":
                self._line(f"{event['name']}{size} …")
        elif event["state"] == "end" and event["name"] == "compile" and "seconds" in event:
            self._line(f"compiled{size} in {event['seconds']:.2f} s")

    def _on_step(self, event: dict[str, Any]) -> None:
        if event.get("compiled"):
            self._line(f"step {event['i']} compiled a graph ({event['dt_s']:.2f} s, excluded from the figures)")
        typical = self.tracker.typical_step_s
        speed = f"{typical:.3f} s/step" if typical is not None else "compiling"
        # The live view's figure: the rolling throughput of the steady window (none during warm-up).
        throughput = self.tracker.steady.throughput
        if throughput is not None:
            speed += f"  {figure(throughput)} samples/s"
        speed += interval_text(event.get("ci_pct"), getattr(self.spec, "target_ci", None), "  ")
        self._progress(self.tracker.fraction,
                       f"{event['i']}/{self.spec.steps} steps  {speed}  {_eta(self.tracker.eta_s)}")

    def _on_latency(self, event: dict[str, Any]) -> None:
        shape = where_text(event["batch_size"], event.get("seq_len"))
        self._progress(self.tracker.fraction, f"{shape}: p50 {event['p50_ms']:.2f} ms, "
                       f"p99 {event['p99_ms']:.2f} ms over {counted(event['count'], 'request')}"
                       + interval_text(event.get("ci_pct"), getattr(self.spec, "target_ci", None), ", "))

    def _on_log(self, event: dict[str, Any]) -> None:
        if event.get("level") in ("warning", "error"):
            self._line(f"{event['level']}: {event['message']}")

    def _on_error(self, event: dict[str, Any]) -> None:
        self._line(f"error ({event['kind']}): {event['message']}")

    def _on_end(self, event: dict[str, Any]) -> None:
        self._line(f"run {event['status']} at {local_time_text(event.get('t'), '%H:%M:%S')}")


class SharedStream:
    """stderr shared by several hosts' printers: whole lines, one writer at a time, no in-place bar."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._pending = ""

    def isatty(self) -> bool:
        return False  # interleaved hosts cannot share one redrawn bar: every printer writes lines

    def write(self, text: str) -> None:
        with self._lock:
            self._pending += text
            if "\n" in self._pending:
                complete, self._pending = self._pending.rsplit("\n", 1)
                self._stream.write(complete + "\n")
                self._stream.flush()

    def flush(self) -> None:
        pass


def progress_stream(hosts: int) -> TextIO:
    """stderr for one host (with a live bar on a terminal); a line-locked stream for several."""
    return sys.stderr if hosts <= 1 else SharedStream(sys.stderr)  # type: ignore[return-value]
