"""The LLM figures' arithmetic on recorded timestamps (remote_agent/llm_figures.py)."""
from __future__ import annotations

import pytest

from remote_agent.llm_figures import (
    SloError,
    Timeline,
    call_figures,
    generate_summary,
    itl_s,
    level_meets,
    parse_slo,
    serve_summary,
    slo_text,
    tpot_s,
    ttft_s,
    usd_per_1m_tokens,
)


def test_one_call_ttft_tpot_and_rates():
    # batch 4, 16 prompt tokens, 3 new tokens: first at 0.2 s, then 0.25 and 0.3, returned at 0.3
    call = Timeline(start=10.0, token_times=(10.2, 10.25, 10.3), output_tokens=3, prompt_tokens=16, batch=4)
    f = call_figures(call)
    assert f["ttft_s"] == pytest.approx(0.2)
    assert f["e2e_s"] == pytest.approx(0.3)
    assert f["tpot_s"] == pytest.approx(0.05)  # (0.3 - 0.2) / (3 - 1)
    assert f["prefill_tok_s"] == pytest.approx(4 * 16 / 0.2)
    assert f["decode_tok_s"] == pytest.approx(4 * 2 / 0.1)
    assert f["output_tok_s"] == pytest.approx(4 * 3 / 0.3)


def test_n_equals_one_has_no_tpot_and_n_equals_two_has_one_gap():
    one = Timeline(0.0, (0.5,), output_tokens=1, prompt_tokens=8)
    assert tpot_s(one) is None and itl_s(one) == []
    assert call_figures(one)["decode_tok_s"] is None
    two = Timeline(0.0, (0.5, 0.8), output_tokens=2, prompt_tokens=8)
    assert tpot_s(two) == pytest.approx(0.3)
    assert itl_s(two) == [pytest.approx(0.3)]


def test_call_end_after_last_step_counts_in_e2e():
    # generate() returns after its last step: the return is the call's end, not the last stamp
    call = Timeline(0.0, (0.1, 0.2), output_tokens=2, prompt_tokens=4, end=0.25)
    assert call_figures(call)["e2e_s"] == pytest.approx(0.25)
    assert tpot_s(call) == pytest.approx(0.15)


def test_itl_is_kept_per_call_never_across_calls():
    # 3 calls x 4 tokens: 9 within-call gaps, not the 11 a pooled stamp list would give (optimum-benchmark's bug)
    calls = [Timeline(s, (s + 0.1, s + 0.2, s + 0.3, s + 0.4), 4, 8) for s in (0.0, 5.0, 10.0)]
    summary = generate_summary(calls)
    assert summary["itl_ms"]["n"] == 9
    assert summary["itl_ms"]["p99"] == pytest.approx(100.0)
    assert summary["ttft_ms"]["n"] == 3 and summary["ttft_ms"]["p50"] == pytest.approx(100.0)
    assert summary["ttft_ms"]["p99_flag"]  # 3 values: the p99 is their largest, and it says so


def test_serve_throughput_window_goodput_and_errors():
    slo = parse_slo("ttft_p99=250ms,tpot_p99=100ms")
    fast = Timeline(0.0, (0.1, 0.15, 0.2), output_tokens=3, prompt_tokens=10)
    slow = Timeline(0.5, (0.9, 1.0, 1.1), output_tokens=3, prompt_tokens=10)  # TTFT 400 ms: not good
    failed = Timeline(0.2, (), output_tokens=0, prompt_tokens=10, error="connection dropped")
    s = serve_summary([fast, slow, failed], slo)
    assert s["completed"] == 2 and s["errors"] == 1
    assert s["duration_s"] == pytest.approx(1.1)  # first send 0.0 -> last response 1.1
    assert s["requests_per_s"] == pytest.approx(2 / 1.1)
    assert s["output_tok_s"] == pytest.approx(6 / 1.1)
    assert s["total_tok_s"] == pytest.approx(26 / 1.1)
    assert s["good_requests"] == 1 and s["goodput_rps"] == pytest.approx(1 / 1.1)
    assert s["slo_met"] is False and s["error_rate"] == pytest.approx(1 / 3)
    assert s["slo_misses"] == ["p99 TTFT 397 ms > 250 ms", "error rate 33.3% > 1%"]


def test_slo_parsing_presets_and_errors():
    assert parse_slo("mlperf-llama3.1-8b-server") == {"ttft_p99": 2000.0, "tpot_p99": 100.0}
    assert parse_slo("ttft_p99=2s, tpot_p50=30") == {"ttft_p99": 2000.0, "tpot_p50": 30.0}
    assert slo_text({"ttft_p99": 500.0}) == "p99 TTFT ≤ 500 ms"
    with pytest.raises(SloError, match="ttft_p42"):
        parse_slo("ttft_p42=5ms")
    assert level_meets({"completed": 3, "ttft_ms": {"p99": 100.0}, "tpot_ms": {"p99": None}},
                       {"ttft_p99": 200.0, "tpot_p99": 10.0}) == (True, [])


def test_usd_per_1m_tokens():
    assert usd_per_1m_tokens(3.6, 1000.0) == pytest.approx(1.0)
    assert usd_per_1m_tokens(None, 10.0) is None
    assert usd_per_1m_tokens(1.0, 0.0) is None


def test_ttft_of_an_empty_timeline_is_missing():
    assert ttft_s(Timeline(0.0, (), 0, 4, error="refused")) is None
    assert generate_summary([])["ttft_ms"]["p50"] is None
