"""Small, dependency-free statistics used on both sides of the wire.

The agent summarises step times and request latencies with these; the app uses
the same functions for medians and intervals across repeats, so the two can
never disagree about what "median" or "ci95" means.
"""
from __future__ import annotations

import math
import random
import statistics
from typing import Callable, Dict, List, Optional, Sequence, Tuple

BOOTSTRAP_RESAMPLES = 2000


def percentile(values: Sequence[float], q: float) -> Optional[float]:
    """The q-th percentile (0..100) with linear interpolation between ranks.

    This is NumPy's default ("linear") definition, so figures can be checked
    against ``numpy.percentile``.  Returns None for an empty sequence.
    """
    if not values:
        return None
    data = sorted(values)
    if len(data) == 1:
        return float(data[0])
    rank = (len(data) - 1) * (q / 100.0)
    low = int(math.floor(rank))
    high = min(low + 1, len(data) - 1)
    return float(data[low] + (data[high] - data[low]) * (rank - low))


def bootstrap_ci(values: Sequence[float], statistic: Callable[[Sequence[float]], float] = statistics.median,
                 resamples: int = BOOTSTRAP_RESAMPLES, confidence: float = 0.95,
                 seed: int = 0) -> Optional[Tuple[float, float]]:
    """Percentile-bootstrap confidence interval of ``statistic`` over ``values``.

    Seeded, so the same data always gives the same interval.  With one value the
    interval collapses to that value; with none it is None.
    """
    if not values:
        return None
    if len(values) == 1:
        return (float(values[0]), float(values[0]))
    data = list(values)
    if all(value == data[0] for value in data):  # (a NaN equals nothing: it takes the resamples below)
        # Every resample is this same data, so every estimate is statistic(data) and so is the interval the
        # 2,000 resamples would give, without their cost (repeats that agree exactly; the event fuzz's copies).
        # Not for an infinite estimate: the resamples' percentile of infinities is NaN, and stays so.
        estimate = float(statistic(data))
        if math.isfinite(estimate):
            return (estimate, estimate)
    rng = random.Random(seed)
    estimates = sorted(statistic(rng.choices(data, k=len(data))) for _ in range(resamples))
    tail = (1.0 - confidence) / 2.0 * 100.0
    low = percentile(estimates, tail)
    high = percentile(estimates, 100.0 - tail)
    assert low is not None and high is not None
    return (low, high)


def describe(values: Sequence[float]) -> Dict[str, Optional[float]]:
    """median, mean, p90, stdev and a bootstrap 95% interval of the median."""
    if not values:
        return {"median": None, "mean": None, "p90": None, "stdev": None, "ci95": None}
    ci = bootstrap_ci(values)
    return {
        "median": float(statistics.median(values)),
        "mean": float(statistics.fmean(values)),
        "p90": percentile(values, 90),
        "stdev": float(statistics.stdev(values)) if len(values) > 1 else 0.0,
        "ci95": list(ci) if ci else None,
    }


def latency_summary_ms(latencies_s: Sequence[float]) -> Dict[str, Optional[float]]:
    """p50/p90/p95/p99/mean of request latencies, converted to milliseconds."""
    ms = [x * 1000.0 for x in latencies_s]
    return {
        "p50": percentile(ms, 50),
        "p90": percentile(ms, 90),
        "p95": percentile(ms, 95),
        "p99": percentile(ms, 99),
        "mean": (sum(ms) / len(ms)) if ms else None,
    }


def intervals_overlap(a: Optional[Sequence[float]], b: Optional[Sequence[float]]) -> bool:
    """True when two [lo, hi] intervals share any point (a difference not shown to be real)."""
    if not a or not b:
        return True
    return a[0] <= b[1] and b[0] <= a[1]


def tukey_outliers(values: Sequence[float], k: float = 3.0) -> List[int]:
    """Indices of values beyond ``k`` interquartile ranges from the quartiles.

    Used to *report* outliers (DESIGN.md §5: never drop them silently).
    """
    if len(values) < 4:
        return []
    q1, q3 = percentile(values, 25), percentile(values, 75)
    assert q1 is not None and q3 is not None
    spread = q3 - q1
    low, high = q1 - k * spread, q3 + k * spread
    return [i for i, v in enumerate(values) if v < low or v > high]
