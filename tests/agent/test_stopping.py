"""--target-ci's stopping rules (remote_agent/stopping.py) on recorded step streams and on known distributions."""
from __future__ import annotations

import json
import math
import random
import statistics

import pytest

from remote_agent.protocol import TARGET_CI_MIN_STEPS
from remote_agent.stopping import ThroughputStop, TrainingStop, median_interval
from tests.conftest import DATA


def recorded_steps(name: str) -> list[dict]:
    lines = (DATA / "runs" / name).read_text().splitlines()
    return [event for event in map(json.loads, lines) if event["type"] == "step"]


def exact_median_interval(values: list[float]) -> tuple[float, float]:
    """The textbook order-statistic interval, from exact binomial sums (math.comb), written independently."""
    ordered, n = sorted(values), len(values)
    j = 0
    while sum(math.comb(n, k) for k in range(j + 1)) / 2 ** n <= 0.025:
        j += 1
    return ordered[j - 1], ordered[n - j]


def first_known_step(steps: list[dict], warmup: int, target: float) -> int | None:
    """Brute force: the first step after which the steady window's median is known to +-target %."""
    window: list[float] = []
    for step in steps:
        if step["compiled"]:
            window = []
        elif step["i"] > warmup:
            window.append(step["dt_s"])
        if len(window) >= TARGET_CI_MIN_STEPS:
            low, high = exact_median_interval(window)
            median = statistics.median(window)
            if 100 * max(median - low, high - median) / median <= target:
                return step["i"]
    return None


def run_rule(steps: list[dict], warmup: int, target: float | None) -> tuple[TrainingStop, int]:
    rule = TrainingStop(target, warmup)
    for step in steps:
        if rule.add(step["i"], step["dt_s"], step["compiled"]):
            return rule, step["i"]
    return rule, steps[-1]["i"]


def test_the_interval_of_the_median_is_the_exact_order_statistic_one():
    rng = random.Random(7)
    for n in (6, 7, 12, 30, 31, 100, 257):
        values = sorted(rng.lognormvariate(0, 0.5) for _ in range(n))
        assert median_interval(values) == exact_median_interval(values)
    assert median_interval([1.0, 2.0, 3.0, 4.0, 5.0]) is None  # five values cannot cover a median 95% of the time


def test_an_h100_training_stops_at_the_first_step_its_median_is_known():
    # 200 steps, 10 warm-up; loader-bound, so steps spread from 18 to 39 ms around a 29.5 ms median.
    steps = recorded_steps("h100-train-vit-base-bf16.events.jsonl")
    for target in (6.0, 8.0, 12.0):
        expected = first_known_step(steps, 10, target)
        rule, stopped = run_rule(steps, 10, target)
        assert expected is not None and stopped == expected < 200
        assert rule.stopped_by == "target_ci" and rule.ci_pct <= target
        assert stopped - 10 >= TARGET_CI_MIN_STEPS


def test_a_stop_never_comes_before_the_floor_even_when_every_step_is_the_same():
    steps = [{"i": i, "dt_s": 0.25, "compiled": False} for i in range(1, 201)]
    rule, stopped = run_rule(steps, 10, 0.5)
    assert rule.ci_pct == 0.0 and stopped == 10 + TARGET_CI_MIN_STEPS


def test_a_late_compile_starts_the_steady_window_again():
    steps = recorded_steps("train-xla-tiny.events.jsonl")  # steps 1 and 2 compiled, 3 warm-up
    assert [s["i"] for s in steps if s["compiled"]] == [1, 2]
    steady = [dict(s, dt_s=0.03) for s in steps]
    recompiled = [dict(s, compiled=True, dt_s=9.0) if s["i"] == 20 else s for s in steady] + \
        [{"i": i, "dt_s": 0.03, "compiled": False} for i in range(31, 100)]
    _, stopped = run_rule(recompiled, 3, 1.0)
    assert stopped == 20 + TARGET_CI_MIN_STEPS  # not 3 + 30: the compile in step 20 reset the window


def test_a_target_missed_at_the_cap_says_so():
    steps = recorded_steps("train-cpu-2vcpu-telemetry.events.jsonl")  # a loaded VM: steps of 1 to 11 s
    rule, stopped = run_rule(steps, 5, 2.0)
    assert stopped == steps[-1]["i"] == 30 and rule.stopped_by is None
    block, warning = rule.outcome(cap=30)
    assert block["stopped_by"] == "steps" and block["target_ci_pct"] == 2.0 and block["ci_pct"] > 2.0
    assert warning.startswith("the ±2 % target was not reached within --steps 30: the median step time's 95% "
                              "interval is ±")
    assert "after 25 steady steps (fewer than the 30 a stop rests on); raise --steps" in warning


def test_without_a_target_the_rule_only_measures_and_agrees_with_the_results_bootstrap_interval():
    events = [json.loads(line) for line in (DATA / "runs" / "h100-train-vit-base-bf16.events.jsonl").read_text()
              .splitlines()]
    steps = [e for e in events if e["type"] == "step"]
    rule, stopped = run_rule(steps, 10, None)
    assert stopped == 200
    block, warning = rule.outcome(cap=200)
    assert block == {"stopped_by": "steps", "target_ci_pct": None, "ci_pct": rule.ci_pct, "min_steady_steps": None}
    assert warning is None
    # The recorded Result's bootstrap interval of the median (2,000 resamples), as +-% on its wider side.
    step_time = next(e for e in events if e["type"] == "result")["result"]["train"]["step_time_s"]
    low, high = step_time["ci95"]
    bootstrap_pct = 100 * max(step_time["median"] - low, high - step_time["median"]) / step_time["median"]
    assert rule.ci_pct == pytest.approx(bootstrap_pct, rel=0.1)  # ±5.3 %: the seed's 190 steps did not pin it to 2


def test_the_median_interval_covers_the_true_median_at_least_95_percent_of_the_time():
    rng = random.Random(11)
    true_median = math.exp(0.0)  # lognormal(0, 0.4): skewed, like step times with a slow tail
    covered = 0
    for _ in range(2000):
        low, high = median_interval(sorted(rng.lognormvariate(0, 0.4) for _ in range(40)))
        covered += low <= true_median <= high
    assert covered / 2000 >= 0.95


def test_inference_stops_once_the_throughput_is_known_and_not_before_min_iters():
    rng = random.Random(3)
    rule = ThroughputStop(2.0, min_iters=100)
    count = 0
    while not rule.add(0.004 * rng.lognormvariate(0, 0.3)):
        count += 1
        assert count < 100_000
    assert rule.count >= 100 and rule.stopped_by == "target_ci" and rule.ci_pct() <= 2.0
    block, warning = rule.outcome("duration", 5.0, "batch 4")
    assert block == {"stopped_by": "target_ci", "target_ci_pct": 2.0, "ci_pct": rule.ci_pct()} and warning is None

    steady = ThroughputStop(50.0, min_iters=100)
    assert not any(steady.add(0.004) for _ in range(99))  # identical requests: known at once, but p99 needs 100
    assert steady.add(0.004) and steady.count == 100


def test_the_throughput_stopped_on_is_within_the_target_of_the_truth_in_most_runs():
    # Requests whose latency drifts (a noisy neighbour comes and goes): batch means keep the interval honest.
    rng = random.Random(5)
    mean_latency = 0.004 * math.exp(0.3 ** 2 / 2)
    within = 0
    for _ in range(300):
        rule, total, n, drift = ThroughputStop(3.0, min_iters=100), 0.0, 0, 1.0
        while True:
            drift = 1.0 + 0.8 * (drift - 1.0) + rng.gauss(0, 0.02)
            latency = 0.004 * rng.lognormvariate(0, 0.3) * drift
            total, n = total + latency, n + 1
            if rule.add(latency) or n > 50_000:
                break
        within += abs(mean_latency / (total / n) - 1.0) <= 0.03
    assert within / 300 >= 0.9


def test_inference_reports_a_target_missed_at_the_duration_cap():
    rule = ThroughputStop(1.0, min_iters=100)
    # A neighbour that takes the machine every other 20 requests: far from ±1 %.
    assert not any(rule.add(0.001 if (k // 20) % 2 else 0.003) for k in range(300))
    block, warning = rule.outcome("duration", 2.0, "batch 1")
    assert block["stopped_by"] == "duration" and block["ci_pct"] > 1.0
    assert warning.startswith("batch 1: the ±1 % target was not reached within --duration 2 s: the throughput's 95% "
                              "interval is ±")
    assert warning.endswith("after 300 requests; raise --duration to measure longer")


def test_a_target_waits_for_the_100_requests_a_p99_needs_even_under_a_lower_min_iters():
    # --min-iters 20 --target-ci 50: identical requests are known at once, but the row's p99 would be rough.
    rule = ThroughputStop(50.0, min_iters=20)
    assert not any(rule.add(0.004) for _ in range(99))
    assert rule.add(0.004) and rule.count == 100 and rule.stopped_by == "target_ci"
    # A --min-iters above 100 is still the floor.
    higher = ThroughputStop(50.0, min_iters=250)
    assert not any(higher.add(0.004) for _ in range(249)) and higher.add(0.004) and higher.count == 250
    # Without a target --min-iters alone decides (the loop's own rule): the rule never stops a run.
    assert not any(ThroughputStop(None, min_iters=20).add(0.004) for _ in range(300))


def test_a_target_known_before_100_requests_that_duration_cuts_short_says_so():
    rule = ThroughputStop(5.0, min_iters=20)
    assert not any(rule.add(0.004 if k % 2 else 0.0041) for k in range(60))  # --duration ran out after 60
    block, warning = rule.outcome("duration", 0.25, "batch 4")
    assert block["stopped_by"] == "duration" and block["ci_pct"] < 5.0
    assert warning.startswith("batch 4: the throughput's 95% interval reached ±")
    assert warning.endswith("(target ±5 %), but a stop waits for 100 requests (p99 needs 100) and --duration 0.25 s "
                            "ended it after 60; raise --duration to measure longer")


@pytest.mark.parametrize("target", [0, None])
def test_a_target_of_zero_or_none_is_off(target):
    rule = TrainingStop(target, 0)
    assert not any(rule.add(i, 0.1, False) for i in range(1, 200))
    assert rule.outcome(199) == ({"stopped_by": "steps", "target_ci_pct": None, "ci_pct": 0.0,
                                  "min_steady_steps": None}, None)
