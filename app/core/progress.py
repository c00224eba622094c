"""How far a run has got, and how long it has left, from its events (the CLI's bar and the GUI's)."""
from __future__ import annotations

import statistics
from collections import deque
from typing import Any

from app.core.step_window import ROLLING_STEPS, SteadyWindow

RECENT_STEPS = ROLLING_STEPS


class ProgressTracker:
    """Consumes one run's protocol events; ``fraction`` (0..1) and ``eta_s`` follow them.

    Training: steps done of ``spec.steps``; the ETA is the typical step time
    (``typical_step_s``) times the steps left.  Inference: artefacts (batch
    sizes x sequence lengths) done plus the measured share of the current one (``spec.duration`` is the
    least it measures); the ETA counts measuring time only, so it is a floor.
    ``steady`` holds the rolling step time and throughput that the views and the
    CLI quote (warm-up and compiled steps left out).
    """

    def __init__(self, spec: Any) -> None:
        self.spec = spec
        self.recent: deque[float] = deque(maxlen=RECENT_STEPS)
        self.steady = SteadyWindow(int(getattr(spec, "warmup", 0) or 0))
        self.step_steady = False  # whether the latest step entered the steady window
        self.fraction = 0.0
        self.eta_s: float | None = None
        self.step = 0
        self.sizes_done = 0
        self.measure_start: float | None = None

    @property
    def typical_step_s(self) -> float | None:
        """The rolling median step time of the steady window; during warm-up, of the recent steps that did
        not compile (None before the first)."""
        if len(self.steady):
            return self.steady.median_step_s
        return statistics.median(self.recent) if self.recent else None

    def update(self, event: dict[str, Any]) -> bool:
        """Take one event; True when ``fraction`` or ``eta_s`` may have changed."""
        kind = event["type"]
        if kind == "step":
            self._step(event)
            return True
        if kind == "latency" or (kind == "gen_call" and event.get("stage") == "measure"):
            self._latency(event)
            return True
        if kind == "phase":
            if event["name"] == "measure" and event["state"] == "start":
                self.measure_start = event["t"]
            elif event["name"] == "measure" and event["state"] == "end" and event.get("batch_size") is not None:
                self.sizes_done += 1
                self.fraction = min(1.0, self.sizes_done / self.artefacts)
                return True
            return False
        if kind == "end" and event.get("status") in ("ok", "partial"):
            self.fraction, self.eta_s = 1.0, 0.0
            return True
        return False

    def _step(self, event: dict[str, Any]) -> None:
        if not event.get("compiled"):
            self.recent.append(event["dt_s"])
        self.step_steady = self.steady.add(event)
        self.step = event["i"]
        total = max(1, self.spec.steps)
        typical = self.typical_step_s
        self.fraction = min(1.0, event["i"] / total)
        self.eta_s = typical * max(0, total - event["i"]) if typical is not None else None

    @property
    def artefacts(self) -> int:
        """What an inference run measures one after the other: each batch size at each sequence length."""
        if getattr(self.spec, "workload", None) == "generate":  # batch x prompt lengths x output lengths
            return max(1, len(self.spec.batch_sizes)) * max(1, len(self.spec.input_lens or ())) \
                * max(1, len(self.spec.output_lens or ()))
        lengths = len(getattr(self.spec, "seq_lens", ()) or ())
        return max(1, len(self.spec.batch_sizes)) * max(1, lengths)

    def measured_share(self, now: float) -> float:
        """The share of ``spec.duration`` measured at time ``now`` for the current batch size."""
        if self.measure_start is None or not self.spec.duration:
            return 0.0
        return min(1.0, max(0.0, now - self.measure_start) / self.spec.duration)

    def _latency(self, event: dict[str, Any]) -> None:
        sizes = self.artefacts
        within = self.measured_share(event["t"])
        self.fraction = min(1.0, (self.sizes_done + within) / sizes)
        left_sizes = max(0, sizes - self.sizes_done - 1)
        self.eta_s = (1.0 - within) * self.spec.duration + left_sizes * self.spec.duration
