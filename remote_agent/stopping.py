"""Stop when the figure is known (``--target-ci PCT``): the rules the agent applies on the host.

The agent decides on the host, step by step, so a dropped connection changes nothing.

Training: the figure is the median steady step time.  Its 95% interval is the
distribution-free one from order statistics (the ranks a Binomial(n, 1/2) puts
2.5% beyond on each side): no resampling, so it costs one sorted insert a step,
where the Result's bootstrap interval costs 2,000 resamples.  For the median the
two agree closely (the bootstrap's median draws are those same order statistics,
with the same binomial weights).  The steady window is the Result's: after
``--warmup`` steps and after the last step that compiled; a late compile starts
it again.  A stop needs ``TARGET_CI_MIN_STEPS`` steady steps; ``--steps`` is the cap.

Inference: the figure is the throughput, samples / wall time, i.e. the batch fed
over the mean request latency.  Requests are not independent (a noisy neighbour,
a clock change lasts many of them), so the interval is by batch means: the
requests so far cut into ``BATCHES`` consecutive groups, a Student t interval over
the groups' mean latencies, turned into throughput.  A stop needs ``--min-iters``
requests and never fewer than ``P99_MIN_REQUESTS`` (100): a throughput known sooner
would leave the row's p99 rough, and the target asks for known figures; ``--duration``
is the cap (it may still end a batch size under 100 requests, with a warning).
"""
from __future__ import annotations

import bisect
import math
import statistics
from typing import Any, Dict, List, Optional, Tuple

from remote_agent.protocol import P99_MIN_REQUESTS, TARGET_CI_MIN_STEPS

CONFIDENCE = 0.95
MEDIAN_MIN_VALUES = 6  # below this even the extreme order statistics cover the median less than 95% of the time
BATCHES = 10
T_975_DF9 = 2.2622  # Student t, 97.5th percentile, 9 degrees of freedom (BATCHES - 1)

_median_ranks: Dict[int, int] = {}


def _lower_rank(n: int) -> int:
    """The largest j (1-based) with P(Binomial(n, 1/2) < j) <= 2.5%: [x_(j), x_(n+1-j)] covers the median >= 95%."""
    if n not in _median_ranks:
        # Summed in logs (2**-n underflows past n ~ 1000), from 6 standard deviations below the middle: the
        # tail below holds less than 1e-9, and a step costs O(sqrt n), not O(n).
        log_half = n * math.log(0.5)
        start = max(0, int(n / 2.0 - 3.0 * math.sqrt(n)))
        cumulative, j = 0.0, start
        for k in range(start, n + 1):
            p = math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + log_half)
            if cumulative + p > (1.0 - CONFIDENCE) / 2.0:
                break
            cumulative += p
            j = k + 1
        _median_ranks[n] = j
    return _median_ranks[n]


def median_interval(ordered: List[float]) -> Optional[Tuple[float, float]]:
    """The 95% interval of the median of ``ordered`` (sorted ascending), or None with too few values."""
    n = len(ordered)
    if n < MEDIAN_MIN_VALUES:
        return None
    j = max(1, _lower_rank(n))
    return ordered[j - 1], ordered[n - j]


def relative_half_width(centre: float, low: float, high: float) -> Optional[float]:
    """The interval's wider side as a percentage of ``centre`` (the ±PCT a target is held to)."""
    if centre <= 0:
        return None
    return 100.0 * max(centre - low, high - centre) / centre


def pct_text(pct: float) -> str:
    """``±1.9 %``, ``±31 %``: two significant digits, never in e-notation."""
    return "±%.2g %%" % pct if pct < 10 else "±%.0f %%" % pct


def median_ci_pct(times: List[float]) -> Optional[float]:
    """±% of the median's 95% interval over step times in any order (the Result's ``ci_pct``)."""
    ordered = sorted(times)
    interval = median_interval(ordered)
    if interval is None:
        return None
    return relative_half_width(statistics.median(ordered), interval[0], interval[1])


class TrainingStop:
    """Rank 0's rule: feed it every step (``add``); True means the figure is known, stop after this step."""

    def __init__(self, target_pct: Optional[float], warmup: int, floor: int = TARGET_CI_MIN_STEPS) -> None:
        self.target_pct = target_pct or None
        self.warmup = warmup
        self.floor = floor
        self.window: List[float] = []  # steady step times, sorted
        self.ci_pct: Optional[float] = None
        self.stopped_by: Optional[str] = None

    def add(self, i: int, dt_s: float, compiled: bool) -> bool:
        if compiled:
            self.window = []  # a compile after warm-up (a recompilation): the steady window starts after it
        elif i > self.warmup:
            bisect.insort(self.window, dt_s)
        interval = median_interval(self.window)
        n = len(self.window)
        median = (self.window[(n - 1) // 2] + self.window[n // 2]) / 2.0 if n else 0.0  # the window is sorted
        self.ci_pct = None if interval is None else relative_half_width(median, interval[0], interval[1])
        if self.target_pct and len(self.window) >= self.floor and self.ci_pct is not None \
                and self.ci_pct <= self.target_pct:
            self.stopped_by = "target_ci"
            return True
        return False

    def outcome(self, cap: int) -> Tuple[Dict[str, Any], Optional[str]]:
        """The Result's stopping fields, and the warning when a target was missed at the cap."""
        stopped_by = self.stopped_by or "steps"
        block = {"stopped_by": stopped_by, "target_ci_pct": self.target_pct, "ci_pct": self.ci_pct,
                 "min_steady_steps": self.floor if self.target_pct else None}
        warning = None
        if self.target_pct and stopped_by != "target_ci":
            reached = "not yet known" if self.ci_pct is None else pct_text(self.ci_pct)
            short = (" (fewer than the %d a stop rests on)" % self.floor) if len(self.window) < self.floor else ""
            warning = ("the ±%g %% target was not reached within --steps %d: the median step time's 95%% interval "
                       "is %s after %d steady steps%s; raise --steps to measure longer"
                       % (self.target_pct, cap, reached, len(self.window), short))
        return block, warning


class ThroughputStop:
    """One batch size's rule: feed it every request's latency (``add``); True means stop measuring."""

    def __init__(self, target_pct: Optional[float], min_iters: int) -> None:
        self.target_pct = target_pct or None
        self.min_iters = min_iters
        # The target's floor: --min-iters, raised to the requests a p99 needs (a --min-iters 20 run with a
        # target would otherwise stop with a rough p99 whenever its throughput settles early).
        self.floor = max(min_iters, P99_MIN_REQUESTS)
        self._sums = [0.0]  # prefix sums of the latencies: any group's mean in O(1)
        self._next_check = self.floor
        self.stopped_by: Optional[str] = None

    @property
    def count(self) -> int:
        return len(self._sums) - 1

    def add(self, latency_s: float) -> bool:
        self._sums.append(self._sums[-1] + latency_s)
        if not self.target_pct or self.count < self._next_check:
            return False
        # Looked at every 2 % more requests, not every request: the time between requests is in the wall
        # time the throughput is measured over, and a 0.3 ms request would otherwise pay for the look.
        self._next_check = self.count + max(1, self.count // 50)
        pct = self.ci_pct()
        if pct is not None and pct <= self.target_pct:
            self.stopped_by = "target_ci"
            return True
        return False

    def ci_pct(self) -> Optional[float]:
        """±% of the throughput's 95% interval by batch means, or None with fewer than 2 requests a group."""
        n = self.count
        if n < 2 * BATCHES:
            return None
        edges = [round(g * n / BATCHES) for g in range(BATCHES + 1)]
        means = [(self._sums[edges[g + 1]] - self._sums[edges[g]]) / (edges[g + 1] - edges[g]) for g in range(BATCHES)]
        mean = self._sums[n] / n
        centre = sum(means) / BATCHES
        spread = math.sqrt(sum((m - centre) ** 2 for m in means) / (BATCHES - 1))
        half = T_975_DF9 * spread / math.sqrt(BATCHES)
        if half >= mean:
            return None  # the interval reaches zero latency: unbounded throughput
        # throughput = batch / latency: the interval [mean - half, mean + half] of the latency maps to
        # [1/(mean + half), 1/(mean - half)] x batch, whose wider side is the upper one.
        return 100.0 * half / (mean - half)

    def outcome(self, capped_by: str, cap_s: float, where: str) -> Tuple[Dict[str, Any], Optional[str]]:
        """The row's stopping fields and, when a target was missed, the warning.

        ``capped_by``: what ended the measurement when the target did not (``duration``,
        or ``min_iters`` when the requests' floor came last).
        """
        stopped_by = self.stopped_by or capped_by
        pct = self.ci_pct()
        block = {"stopped_by": stopped_by, "target_ci_pct": self.target_pct, "ci_pct": pct}
        warning = None
        if self.target_pct and stopped_by != "target_ci":
            if pct is not None and pct <= self.target_pct and self.count < self.floor:
                # Known in time, but too few requests for the p99 the target also waits for.
                warning = ("%s: the throughput's 95%% interval reached %s (target ±%g %%), but a stop waits for "
                           "%d requests (p99 needs %d) and --duration %g s ended it after %d; raise --duration "
                           "to measure longer" % (where, pct_text(pct), self.target_pct, self.floor,
                                                  P99_MIN_REQUESTS, cap_s, self.count))
                return block, warning
            reached = (pct_text(pct) if pct is not None else "not yet known" if self.count < 2 * BATCHES
                       else "unbounded (request times vary too much)")
            warning = ("%s: the ±%g %% target was not reached within --duration %g s: the throughput's 95%% "
                       "interval is %s after %d requests; raise --duration to measure longer"
                       % (where, self.target_pct, cap_s, reached, self.count))
        return block, warning
