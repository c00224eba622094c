"""The rolling step time and throughput of a training run, over the steady window only (DESIGN.md §5).

The live chart, the figures line and the CLI's progress line all quote these
two numbers, so they come from one place.  A step counts when it is in the
steady window the Result uses: after ``--warmup`` steps and after the last step
that compiled a graph.  Of those, the latest ``size`` are the rolling window;
throughput is their samples over their summed step time, the Result's own
formula (``summarize_train``) on a shorter window, so a steady run plots flat
and ends on the Result's figure.  A compile after warm-up (a recompilation)
restarts the window, as it restarts the Result's.
"""
from __future__ import annotations

import statistics
from collections import deque
from typing import Any

ROLLING_STEPS = 20


class SteadyWindow:
    """The latest ``size`` steady steps of one run; feed it every ``step`` event in order."""

    def __init__(self, warmup: int, size: int = ROLLING_STEPS) -> None:
        self.warmup = warmup
        self.size = size
        self._steps: deque[tuple[float, float]] = deque(maxlen=size)  # (dt_s, samples)

    def add(self, step: dict[str, Any]) -> bool:
        """Take one ``step`` event; True if it entered the window (it did not compile and warm-up is over)."""
        if step.get("compiled"):
            self._steps.clear()  # the steady window starts after the last compile
            return False
        if int(step["i"]) <= self.warmup:
            return False
        self._steps.append((float(step["dt_s"]), float(step["samples"])))
        return True

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def median_step_s(self) -> float | None:
        """The median step time of the window (None before the first steady step)."""
        return statistics.median(dt for dt, _samples in self._steps) if self._steps else None

    @property
    def throughput(self) -> float | None:
        """Samples per second over the window: its samples / its summed step time (None when empty)."""
        seconds = sum(dt for dt, _samples in self._steps)
        return sum(samples for _dt, samples in self._steps) / seconds if seconds > 0 else None
