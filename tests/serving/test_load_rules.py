"""Pure parts of the load: the seeded Poisson schedule, the rate search, the operating point and its sentences."""
from __future__ import annotations

import statistics

from remote_agent import llm_figures as figures
from remote_agent.serving.load import next_rates, poisson_schedule


def test_the_poisson_schedule_is_seeded_and_reproducible():
    first = poisson_schedule(4.0, 2000, seed=3)
    assert first == poisson_schedule(4.0, 2000, seed=3)
    assert first != poisson_schedule(4.0, 2000, seed=4)
    assert first != poisson_schedule(5.0, 2000, seed=3)
    gaps = [b - a for a, b in zip([0.0] + first, first, strict=False)]
    assert all(g > 0 for g in gaps)
    assert abs(statistics.fmean(gaps) - 0.25) < 0.02  # exponential gaps of mean 1/rate (2000 draws, seed 3)
    assert poisson_schedule(4.0, 3, seed=3) == first[:3]


def test_the_rate_search_tries_the_ceiling_then_thirds_then_bisects():
    assert next_rates([], 9.0, 4) == 9.0
    assert next_rates([(9.0, True)], 9.0, 4) is None  # the ceiling met it: nothing higher to find
    assert next_rates([(9.0, False)], 9.0, 4) == 3.0
    assert next_rates([(9.0, False), (3.0, True)], 9.0, 4) == 6.0
    assert next_rates([(9.0, False), (3.0, True), (6.0, False)], 9.0, 4) == 4.5
    assert next_rates([(9.0, False), (3.0, True), (6.0, False), (4.5, True)], 9.0, 4) is None  # 4 probes spent
    assert next_rates([(9.0, False), (3.0, True), (6.0, True)], 9.0, 5) == 7.5


def _level(concurrency, ttft_p99, tpot_p99, out_tok_s, rate=None):
    return {"concurrency": concurrency, "rate": rate, "completed": 10, "requests": 10, "output_tok_s": out_tok_s,
            "ttft_ms": {"p99": ttft_p99}, "tpot_ms": {"p99": tpot_p99}}


def test_an_slo_no_level_meets_is_one_sentence_with_the_best_any_level_did():
    levels = [_level(1, 730.0, 20.0, 50.0), _level(4, 1900.0, 25.0, 150.0)]
    slo = figures.parse_slo("ttft_p99=500ms")
    assert figures.slo_unmet_sentence(levels, slo) == "no load met p99 TTFT ≤ 500 ms; the lowest was 730 ms at " \
                                                      "concurrency 1"
    assert figures.goodput_point(levels, slo) is None
    both = figures.parse_slo("ttft_p99=500ms,tpot_p99=10ms")
    assert figures.slo_unmet_sentence(levels, both) == (
        "no load met p99 TPOT ≤ 10 ms; the lowest was 20 ms at concurrency 1; "
        "no load met p99 TTFT ≤ 500 ms; the lowest was 730 ms at concurrency 1")


def test_the_operating_point_is_the_fastest_level_meeting_the_slo_not_saturation():
    levels = [_level(1, 100.0, 20.0, 50.0), _level(2, 300.0, 30.0, 90.0), _level(4, 2500.0, 80.0, 150.0),
              _level(None, 450.0, 40.0, 110.0, rate=3.5)]
    slo = figures.parse_slo("mlperf-llama3.1-8b-server")
    assert figures.goodput_point(levels, slo)["output_tok_s"] == 110.0  # the 3.5 req/s level, not concurrency 4
    assert figures.slo_unmet_sentence(levels, slo) is None
    assert figures.goodput_point(levels, None)["concurrency"] == 4  # no SLO: saturation, said so by the caller
    assert figures.level_name(levels[3]) == "3.5 requests/s (Poisson)"


def test_the_rate_search_bisects_above_the_busiest_level_that_met_the_slo():
    assert next_rates([], 10.0, 4, floor=6.0) == 10.0
    assert next_rates([(10.0, False)], 10.0, 4, floor=6.0) == 8.0
    assert next_rates([(10.0, False), (8.0, True)], 10.0, 4, floor=6.0) == 9.0
    assert next_rates([(10.0, False), (8.0, False)], 10.0, 4, floor=6.0) == 7.0
