"""The user's whole job: hours and dollars per host from measured throughput and price, compile counted once."""
from __future__ import annotations

import pytest

from app.core.compare import CompareError, CompareOptions, compare_runs
from app.core.job_cost import JobSize, job_sentences
from tests.core.runs import book, infer_run, train_run

TRN1_32_OD, TRN1_32_SPOT = 21.5, 2.4334  # trn1.32xlarge in us-east-1 in the shipped price book
INF2_OD, INF2_SPOT = 0.7582, 0.1152      # inf2.xlarge
IMAGENET = 1_281_167


def test_three_epochs_of_imagenet_cost_the_work_plus_one_cold_or_one_warm_compile_on_demand_and_spot():
    # AWS's published ViT-Base fine-tuning rate on trn1.32xlarge (6587.25 images/s); the first run compiled
    # cold (1200 s), the repeat found the graphs in the Neuron compile cache (15 s).
    cold = train_run("trn", "trn1.32xlarge", 6587.25, compile_s=1200.0)
    warm = train_run("trn", "trn1.32xlarge", 6587.25, compile_s=15.0)
    job = JobSize.of_epochs(3, IMAGENET)
    doc = compare_runs([cold, warm], book(), CompareOptions(job=job),
                       {cold.run_id: "cold", warm.run_id: "cached"})
    work_s = 3 * IMAGENET / 6587.25  # 583.5 s of training
    for row in doc["rows"]:
        assert row["job_hours"] == pytest.approx((work_s + 1200) / 3600)
        assert row["job_usd"] == pytest.approx((work_s + 1200) / 3600 * TRN1_32_OD)  # $10.65
        figures = row["job"]
        assert figures["work"] == 3 * IMAGENET and figures["compile_cold_s"] == 1200.0
        assert figures["compile_warm_s"] == 15.0 and figures["hours_warm"] == pytest.approx((work_s + 15) / 3600)
        assert figures["usd_on_demand_warm"] == pytest.approx((work_s + 15) / 3600 * TRN1_32_OD)  # $3.57
        assert figures["usd_spot_cold"] == pytest.approx((work_s + 1200) / 3600 * TRN1_32_SPOT)
        assert figures["usd_spot_warm"] == pytest.approx((work_s + 15) / 3600 * TRN1_32_SPOT)
    assert doc["job"]["describe"]["train"] == "3,843,501 samples (3 epochs × 1,281,167)"
    [sentence] = job_sentences(doc)
    assert sentence == ("Your job of 3,843,501 samples (3 epochs × 1,281,167) costs least on trn1.32xlarge: "
                        "0.495 h and $10.65 on-demand with a cold compile ($3.57 with the compile cache warm; "
                        "spot $1.21).")


def test_spot_comparison_makes_spot_the_headline_and_the_cheapest_host_is_named():
    trn = train_run("trn", "trn1.32xlarge", 6587.25, compile_s=1200.0)
    inf = train_run("inf", "inf2.xlarge", 300.0, compile_s=900.0)
    doc = compare_runs([trn, inf], book(), CompareOptions(market="spot", job=JobSize(samples=1e6)))
    by_label = {row["label"]: row for row in doc["rows"]}
    inf_s = 1e6 / 300.0 + 900.0  # no compiler log: the longest compile measured counts as the cold one
    assert by_label["inf2.xlarge"]["job_usd"] == pytest.approx(inf_s / 3600 * INF2_SPOT)
    assert by_label["inf2.xlarge"]["job"]["usd_on_demand_cold"] == pytest.approx(inf_s / 3600 * INF2_OD)
    assert doc["job"]["cheapest"]["train"] == "inf2.xlarge"
    # Without a cache hit in the log nothing says what a warm start costs: N/A with the reason, never a guess.
    assert by_label["inf2.xlarge"]["job"]["hours_warm"] is None
    assert "run it again on the same host" in by_label["inf2.xlarge"]["job"]["compile_warm_basis"]


def test_a_multi_node_run_pays_for_every_node_and_an_unpriced_host_has_hours_but_no_dollars():
    two = train_run("trn-a,trn-b", "trn1.32xlarge", 12000.0, compile_s=600.0)
    two.result["train"]["nodes"] = 2
    here = train_run("box", None, 50.0, compile_s=0.0, backend="cpu")
    doc = compare_runs([two, here], book(), CompareOptions(job=JobSize(samples=4.32e7)))
    rows = {row["host"]: row for row in doc["rows"]}
    hours = (4.32e7 / 12000.0 + 600.0) / 3600  # 1.1667 h
    assert rows["trn-a,trn-b"]["job_hours"] == pytest.approx(hours)
    assert rows["trn-a,trn-b"]["job_usd"] == pytest.approx(hours * 2 * TRN1_32_OD)
    assert rows["box"]["job_hours"] == pytest.approx(4.32e7 / 50.0 / 3600)  # eager: nothing to compile
    assert rows["box"]["job"]["hours_warm"] == rows["box"]["job_hours"]
    assert rows["box"]["job_usd"] is None and rows["box"]["job"]["usd_spot_cold"] is None


def test_requests_are_priced_per_batch_size_with_that_batch_size_compile():
    run = infer_run("inf", "inf2.xlarge", [(1, 1000.0, 2.0), (8, 4000.0, 5.0)])  # compile 40 s each
    doc = compare_runs([run], book(), CompareOptions(job=JobSize(requests=1e7)))
    by_batch = {row["batch_size"]: row for row in doc["rows"]}
    assert by_batch[1]["job_hours"] == pytest.approx((1e7 / 1000.0 + 40) / 3600)
    assert by_batch[8]["job_usd"] == pytest.approx((1e7 / 4000.0 + 40) / 3600 * INF2_OD)
    assert doc["job"]["cheapest"]["infer"] == "inf2.xlarge batch 8"
    assert job_sentences(doc)[0].startswith("Your job of 10,000,000 requests costs least on inf2.xlarge at batch 8:")


def test_a_job_for_a_workload_none_of_the_runs_measured_is_refused_in_one_sentence():
    run = infer_run("inf", "inf2.xlarge", [(1, 1000.0, 2.0)])
    with pytest.raises(CompareError, match=r"--job-samples .* sizes a training job, but none of the runs compared is "
                                           "a training run"):
        compare_runs([run], book(), CompareOptions(job=JobSize(samples=1e6)))
    doc = compare_runs([run], book(), CompareOptions())
    assert doc["job"] is None and doc["rows"][0]["job_hours"] is None and doc["rows"][0]["job_usd"] is None
