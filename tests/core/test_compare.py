"""compare: rows per run x batch size, repeat groups, intervals, and a summary no stronger than the data."""
from __future__ import annotations

import pytest

from app.core.compare import CompareError, CompareOptions, compare_runs
from app.core.decision import summary
from tests.core.runs import book, infer_run, train_run


def _group(doc, label, batch=None):
    return next(g for g in doc["groups"] if g["label"] == label and (batch is None or g["batch_size"] == batch))


def test_rows_follow_the_compare_schema_with_price_performance_as_work_per_dollar():
    trn = train_run("trn", "trn1.2xlarge", 100.0)
    inf = train_run("inf", "inf2.xlarge", 78.4)
    doc = compare_runs([trn, inf], book(), CompareOptions(baseline=trn.run_id))
    assert doc["baseline"] == trn.run_id
    required = {"run_id", "host", "instance_type", "workload", "batch_size", "throughput", "usd_per_hour",
                "usd_per_1m", "speedup_vs_baseline", "price_performance_vs_baseline"}
    assert all(required <= row.keys() for row in doc["rows"])
    base, other = doc["rows"]
    assert base["speedup_vs_baseline"] == 1.0 and base["price_performance_vs_baseline"] == 1.0
    assert other["speedup_vs_baseline"] == pytest.approx(0.784)
    # (78.4 / 0.7582) / (100 / 1.34375) = 1.3895: the README's "1.39x samples per dollar" case
    assert other["price_performance_vs_baseline"] == pytest.approx(1.3895, abs=1e-4)
    # 0.7582 / 3600 / 78.4 * 1e6 = 2.6863 $ per 1M samples
    assert other["usd_per_1m"] == pytest.approx(2.6863, abs=1e-4)
    assert other["price_date"] == "snapshot date unknown" and "@00148f2a" in other["price_source"]
    sentence = summary(doc)[0]
    assert sentence.startswith("inf2.xlarge trains vit_base_patch16_224 at 1.39× the samples per dollar of "
                               "trn1.2xlarge and 0.78× its samples per second")
    assert "one run each, so the difference is not tested" in sentence


def test_repeats_give_medians_with_intervals_and_a_plain_claim_when_they_do_not_overlap():
    trn = [train_run("trn", "trn1.2xlarge", t) for t in (100.0, 101.0, 99.0, 100.5)]
    inf = [train_run("inf", "inf2.xlarge", t) for t in (78.0, 79.0, 77.5, 78.2)]
    doc = compare_runs(trn + inf, book())
    assert len(doc["rows"]) == 8
    g_inf, g_trn = _group(doc, "inf2.xlarge"), _group(doc, "trn1.2xlarge")
    assert g_trn["is_baseline"] and g_trn["n"] == 4
    assert g_inf["throughput"] == pytest.approx(78.1)  # median of 77.5, 78.0, 78.2, 79.0
    lo, hi = g_inf["ci95"]
    assert 77.5 <= lo <= 78.1 <= hi <= 79.0
    assert g_inf["price_performance_significant"] is True and g_inf["faster_significant"] is True
    assert g_inf["overlaps_with"] == []
    sentence = summary(doc)[0]
    assert "at 1.38× the samples per dollar of trn1.2xlarge" in sentence
    assert "4 and 4 repeats; the 95% intervals do not overlap" in sentence
    assert "not tested" not in sentence


def test_overlapping_intervals_are_flagged_and_worded_as_no_significant_difference():
    a = [train_run("box-a", "inf2.xlarge", t) for t in (80.0, 83.0, 78.0)]
    b = [train_run("box-b", "inf2.xlarge", t) for t in (81.0, 79.0, 84.0)]
    doc = compare_runs(a + b, book(), CompareOptions(baseline=a[0].run_id))
    g_b = _group(doc, "inf2.xlarge (box-b)")
    assert g_b["overlaps_with"] == ["inf2.xlarge (box-a)"]
    assert _group(doc, "inf2.xlarge (box-a)")["overlaps_with"] == ["inf2.xlarge (box-b)"]
    assert g_b["price_performance_significant"] is False
    sentence = summary(doc)[0]
    assert sentence.startswith("inf2.xlarge (box-b) and inf2.xlarge (box-a) train vit_base_patch16_224 at about "
                               "the same samples per dollar")
    assert "not a significant difference" in sentence


def test_inference_compares_each_batch_size_with_the_same_batch_size_of_the_baseline():
    inf1 = infer_run("inf1", "inf1.xlarge", [(1, 284.7, 10.7), (6, 1180.7, 45.0)])
    inf2 = infer_run("inf2", "inf2.xlarge", [(1, 322.58, 3.3), (6, 950.0, 8.85), (16, 1500.0, 12.0)])
    doc = compare_runs([inf1, inf2], book())
    rows = {(r["host"], r["batch_size"]): r for r in doc["rows"]}
    assert len(rows) == 5
    # the seed's figure: 0.7582 / 3600 / 322.58 * 1e6 = $0.65 per 1M
    assert round(rows[("inf2", 1)]["usd_per_1m"], 2) == 0.65
    assert rows[("inf2", 1)]["speedup_vs_baseline"] == pytest.approx(322.58 / 284.7)
    assert rows[("inf2", 16)]["speedup_vs_baseline"] is None  # the baseline has no batch 16: N/A, not a guess
    assert rows[("inf2", 16)]["usd_per_1m"] is not None
    # One sentence for the sweep, batch by batch: 322.58/0.7582 vs 284.7/0.228 -> 0.34x; 950/0.7582 vs
    # 1180.7/0.228 -> 0.24x; speed 1.13x and 0.80x.
    assert summary(doc)[0] == (
        "inf2.xlarge serves bert-large at 0.34× (batch 1) and 0.24× (batch 6) the inferences per dollar of "
        "inf1.xlarge, and 1.13× and 0.80× its inferences per second (one run each, so the difference is not "
        "tested; use --repeats 3 or more to test it).")


def test_the_cheapest_host_meeting_a_latency_and_throughput_target():
    inf1 = infer_run("inf1", "inf1.xlarge", [(1, 284.7, 10.7), (6, 1180.7, 45.0)])
    inf2 = infer_run("inf2", "inf2.xlarge", [(1, 322.58, 3.3), (4, 950.0, 8.85)])
    gpu = infer_run("gpu", "g5.xlarge", [(4, 1100.0, 6.0)])
    doc = compare_runs([inf1, inf2, gpu], book(), CompareOptions(max_p99_ms=10, min_throughput=900))
    assert doc["choice"]["best"]["label"] == "inf2.xlarge batch 4"
    assert [m["label"] for m in doc["choice"]["meeting"]] == ["inf2.xlarge batch 4", "g5.xlarge batch 4"]
    assert "Cheapest option meeting p99 ≤ 10 ms and throughput ≥ 900/s: inf2.xlarge batch 4 at $0.7582/h" \
        in " ".join(summary(doc))


def test_a_missing_price_compares_speed_only_and_says_why():
    trn1 = train_run("t1", "trn1.32xlarge", 6587.25)
    trn2 = train_run("t2", "trn2.48xlarge", 15000.0, region="us-east-2")
    doc = compare_runs([trn1, trn2], book())
    g = _group(doc, "trn2.48xlarge")
    assert g["usd_per_hour"] is None and g["usd_per_1m"] is None and g["price_performance_vs_baseline"] is None
    assert g["speedup_vs_baseline"] == pytest.approx(15000 / 6587.25)
    text = " ".join(summary(doc))
    assert "2.28× the samples per second of trn1.32xlarge" in text
    assert "cost is not compared: no public on-demand price for trn2.48xlarge in us-east-2" in text
    assert "$0" not in text and "0.00" not in text


def test_failed_and_unfinished_runs_are_listed_not_compared_and_cannot_be_the_baseline():
    ok = train_run("a", "inf2.xlarge", 80.0)
    failed = train_run("b", "trn1.2xlarge", None, status="failed")
    doc = compare_runs([failed, ok], book())
    assert doc["baseline"] == ok.run_id and [r["run_id"] for r in doc["rows"]] == [ok.run_id]
    assert doc["skipped"] == [{"run_id": failed.run_id, "host": "b", "status": "failed",
                               "reason": "out of device memory"}]
    assert f"Run {failed.run_id} on b is left out: out of device memory." in summary(doc)
    with pytest.raises(CompareError, match=r"baseline run .* cannot be used: out of device memory"):
        compare_runs([failed, ok], book(), CompareOptions(baseline=failed.run_id))


def test_budget_and_break_even_for_training():
    trn = train_run("trn", "trn1.32xlarge", 6587.25, compile_s=1200.0)
    inf = train_run("inf", "inf2.48xlarge", 3000.0, compile_s=100.0)
    doc = compare_runs([trn, inf], book(), CompareOptions(epochs=3, samples_per_epoch=1_281_167))
    budget = {b["label"]: b for b in doc["budget"]}
    assert budget["trn1.32xlarge"]["train_usd"] == pytest.approx(3.48465, abs=1e-5)  # see test_cost
    assert budget["trn1.32xlarge"]["compile_usd"] == pytest.approx(1200 / 3600 * 21.5)
    # trn1.32xlarge: $7.1667 compile, $0.90663/1M; inf2.48xlarge: 100 s * 12.98127/3600 = $0.36059, $1.20195/1M
    # (7.1667 - 0.36059) / ((1.20195 - 0.90663) / 1e6) = 23.05M samples
    [even] = doc["break_even"]
    assert even["cheaper_after"] == "trn1.32xlarge" and even["than"] == "inf2.48xlarge"
    assert even["samples"] == pytest.approx(23.05e6, rel=1e-3)


def test_a_host_without_an_instance_type_is_compared_by_speed_and_named_by_host():
    local = train_run("local", None, 7.5)
    inf = train_run("inf", "inf2.xlarge", 80.0)
    doc = compare_runs([local, inf], book())
    g = _group(doc, "local (instance type unknown)")
    assert g["usd_per_hour"] is None and "instance type unknown" in g["price_note"]
    assert any("inf2.xlarge trains" in s and "per second of local (instance type unknown)" in s
               for s in summary(doc))


def test_one_unpriced_host_is_summarised_by_speed_and_runs_without_results_are_refused():
    local = train_run("local", None, 11.44)
    assert summary(compare_runs([local], book()))[0] == (
        "local (instance type unknown) trains vit_base_patch16_224 at 11.44 samples/s; its cost is N/A until it "
        "has a price.")
    failed = train_run("b", "trn1.2xlarge", None, status="failed")
    with pytest.raises(CompareError, match=r"none of the runs has a result to compare \(.* on b: out of device"):
        compare_runs([failed], book())


def test_runs_of_one_host_on_other_backends_or_precisions_are_not_repeats_of_one_setup():
    cpu = train_run("box", "trn1.2xlarge", 20.0, precision="fp32")
    xla = train_run("box", "trn1.2xlarge", 90.0, precision="fp32")
    bf16 = train_run("box", "trn1.2xlarge", 150.0, precision="bf16")
    cpu.result["backend"] = "cpu"
    doc = compare_runs([cpu, xla, bf16], book())
    groups = sorted((g["backend"], g["precision"], g["n"], g["throughput"]) for g in doc["groups"])
    assert groups == [("cpu", "fp32", 1, 20.0), ("neuron", "bf16", 1, 150.0), ("neuron", "fp32", 1, 90.0)]
