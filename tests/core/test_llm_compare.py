"""generate runs in compare, cost, MFU, the job and the decision sentence: per sweep point, like with like."""
from __future__ import annotations

import pytest

from app.core.compare import CompareOptions, compare_runs
from app.core.cost import apply_cost
from app.core.decision import summary
from app.core.job_cost import JobSize, job_sentences
from app.core.llm_results import llm_figures
from tests.core.runs import book, generate_run


def _runs():
    inf2 = generate_run("inf", "inf2.xlarge", [(4, 128, 128, 600.0, 90.0, 20.0)])
    g5 = generate_run("gpu", "g5.xlarge", [(4, 128, 128, 160.0, 40.0, 21.0), (4, 1024, 128, 150.0, 300.0, 22.0)],
                      backend="cuda")
    return inf2, g5


def test_rows_carry_ttft_tpot_and_dollars_per_million_output_and_total_tokens():
    inf2, g5 = _runs()
    doc = compare_runs([g5, inf2], book())
    rows = {(r["label"], r["input_len"]): r for r in doc["rows"]}
    row = rows[("inf2.xlarge", 128)]
    assert row["unit"] == "output tok/s" and row["throughput"] == row["output_tok_s"] == 600.0
    assert (row["ttft_p50_ms"], row["ttft_p99_ms"], row["tpot_p50_ms"]) == (90.0, pytest.approx(117.0), 20.0)
    # 0.7582 $/h / 3600 / 600 tok/s * 1e6 = $0.351 per 1M output tokens; prompt + output count twice the tokens
    assert row["usd_per_1m_output_tokens"] == pytest.approx(0.7582 / 3600 / 600 * 1e6)
    assert row["usd_per_1m_total_tokens"] == pytest.approx(row["usd_per_1m_output_tokens"] / 2)
    assert row["usd_per_1m"] == row["usd_per_1m_output_tokens"] and row["usd_per_1m_tokens"] == \
        row["usd_per_1m_total_tokens"]
    # Like with like: a 1024-token prompt is another measure than a 128-token one at the same batch.
    assert rows[("inf2.xlarge", 128)]["speedup_vs_baseline"] == pytest.approx(600 / 160)
    assert rows[("g5.xlarge", 1024)]["speedup_vs_baseline"] == 1.0  # its own baseline: nobody else measured it
    group = next(g for g in doc["groups"] if g["label"] == "inf2.xlarge")
    assert group["tpot_p50_ms"] == 20.0 and group["usd_per_1m_output_tokens"] == row["usd_per_1m_output_tokens"]


def test_the_decision_sentence_names_shape_batch_cost_ratio_and_tpot():
    inf2, g5 = _runs()
    sentences = summary(compare_runs([g5, inf2], book()))
    # g5: 1.006 / 3600 / 160 * 1e6 = $1.747; inf2 $0.351: 4.97x cheaper per output token
    assert sentences[0] == ("Llama-3.1-8B shape, 128 in / 128 out, batch 4: inf2.xlarge 5× cheaper per output token "
                            "than g5.xlarge at a TPOT within 10% (20 vs 21 ms) (one run each, so the difference is "
                            "not tested; use --repeats 3 or more to test it).")
    assert not any("1024 in" in s for s in sentences)  # no other host measured that shape


def test_cost_block_and_mfu_of_prefill_and_decode():
    from app.core.mfu import apply_mfu
    from app.services.peaks import load_peak_table

    inf2, _ = _runs()
    result = apply_cost(dict(inf2.result), book())
    [cost] = result["cost"]["usd_per_1m_output_tokens"]
    assert (cost["batch_size"], cost["input_len"], cost["output_len"]) == (4, 128, 128)
    assert cost["usd_per_1m_output_tokens"] == pytest.approx(0.7582 / 3600 / 600 * 1e6)
    assert cost["compile_usd"] == pytest.approx(120.0 / 3600 * 0.7582)  # the first call, where it compiled
    apply_mfu(result, load_peak_table())
    point = result["generate"][0]
    # decode: 16 GFLOP a token x 4 rows / 20 ms = 3.2 TFLOP/s; prefill: 2.05 TFLOP a row x 4 rows / 90 ms
    assert point["mfu_decode_basis"]["achieved_tflops"] == pytest.approx(16e9 * 200 / 1e12)
    assert point["mfu_prefill_basis"]["achieved_tflops"] == pytest.approx(2 * 8e9 * 128 * 4 / 0.090 / 1e12)
    assert point["mfu_decode"] is not None and point["mfu_decode"] < point["mfu_prefill"]


def test_a_job_of_requests_is_their_output_tokens_at_the_measured_rate():
    inf2, g5 = _runs()
    doc = compare_runs([g5, inf2], book(), CompareOptions(job=JobSize(requests=1e6)))
    group = next(g for g in doc["groups"] if g["label"] == "inf2.xlarge")
    assert group["job"]["work"] == 128e6
    assert group["job"]["work_hours"] == pytest.approx(128e6 / 600 / 3600)
    sentences = job_sentences(doc)
    assert sentences[0].startswith("Your job of 1,000,000 requests of 128 in / 128 out costs least on inf2.xlarge "
                                   "at batch 4: ")
    assert any(s.startswith("Your job of 1,000,000 requests of 1024 in / 128 out costs least on g5.xlarge") for s in
               sentences)


def test_figures_of_a_point_and_n_equal_one_has_no_tpot():
    point = {"batch_size": 1, "input_len": 8, "output_len": 1, "ttft_ms": {"p50": 5.0, "p99": 9.0, "n": 20},
             "tpot_ms": {"p50": None, "p99": None, "n": 0}, "output_tok_s": 200.0, "total_tok_s": 1800.0}
    figures = llm_figures(point)
    assert figures["tpot_p50_ms"] is None and figures["ttft_p50_ms"] == 5.0 and figures["llm_p99_reliable"] is False
