"""Statistics shared by agent and app, checked against NumPy and hand calculations."""
from __future__ import annotations

import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from remote_agent.stats import bootstrap_ci, describe, intervals_overlap, latency_summary_ms, percentile, tukey_outliers

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@given(values=st.lists(finite, min_size=1, max_size=60), q=st.floats(0, 100))
def test_percentile_matches_numpy_linear(values, q):
    assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)), rel=1e-9, abs=1e-6)


def test_percentile_of_nothing_is_missing_not_zero():
    assert percentile([], 50) is None


def test_bootstrap_interval_is_reproducible_and_brackets_the_median():
    values = [0.100, 0.102, 0.099, 0.101, 0.150, 0.098, 0.100, 0.103, 0.097, 0.101]
    low, high = bootstrap_ci(values)
    assert (low, high) == bootstrap_ci(values)
    assert low <= statistics.median(values) <= high
    assert high < 0.150  # one slow step does not drag the median's interval out to it


def test_describe_hand_checked():
    summary = describe([1.0, 2.0, 3.0, 4.0])
    assert summary["median"] == 2.5 and summary["mean"] == 2.5
    assert summary["p90"] == pytest.approx(3.7)
    assert summary["stdev"] == pytest.approx(1.2909944, rel=1e-6)
    assert summary["ci95"][0] <= 2.5 <= summary["ci95"][1]


def test_latency_summary_in_milliseconds():
    summary = latency_summary_ms([0.001] * 99 + [0.011])
    assert summary["p50"] == pytest.approx(1.0)
    assert summary["p99"] == pytest.approx(1.1)  # the 100th request sits just above the 99th percentile
    assert summary["mean"] == pytest.approx(1.1)


def test_overlap_and_outliers():
    assert intervals_overlap([1, 2], [1.5, 3]) and not intervals_overlap([1, 2], [2.1, 3])
    assert tukey_outliers([1.0, 1.1, 0.9, 1.0, 1.05, 9.0]) == [5]
