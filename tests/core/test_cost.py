"""Cost figures against hand calculations and AWS's published Neuron benchmark tables.

Every expected number here was worked out by hand (the arithmetic is in the
comment next to it) or is printed in tests/data/pricing/README.md §4 and §6.
"""
from __future__ import annotations

import pytest

from app.core.cost import (
    Candidate,
    apply_cost,
    break_even_samples,
    cheapest_meeting,
    price_performance,
    training_budget,
    usd_for_seconds,
    usd_per_million,
    work_per_dollar,
)
from app.core.pricebook import PriceBook, PriceEntry


def test_the_seeds_inf2_bert_large_figure():
    # 0.7582 $/h / 3600 s/h / 322.58 inferences/s * 1e6 = 0.65290 $ per 1M inferences
    assert usd_per_million(0.7582, 322.58) == pytest.approx(0.652896, abs=1e-6)
    assert round(usd_per_million(0.7582, 322.58), 2) == 0.65


@pytest.mark.parametrize(("usd_per_hour", "throughput", "published"), [
    # Inf1 page, bert-base-uncased seq 128 (throughput and latency rows) at the RI-effective $0.110/h
    (0.110, 1180.7, 0.0259),
    (0.110, 284.7, 0.1073),
    # Inf2 page, bert-base-uncased batch 8 at RI $0.328/h (the page's column) and on-demand $0.7582/h
    (0.328, 2674.19, 0.0341),
    (0.7582, 2674.19, 0.0788),
    # Trn1 training, HF ViT-Base fine-tuning on trn1.32xlarge at on-demand $21.50/h, per 1M samples
    (21.5, 6587.25, 0.9066),
])
def test_awss_formula_reproduces_the_published_neuron_tables(usd_per_hour, throughput, published):
    assert round(usd_per_million(usd_per_hour, throughput), 4) == published


def test_the_inf1_page_prints_three_decimals_and_the_formula_gives_them():
    assert round(usd_per_million(0.110, 1180.7), 3) == 0.026


@pytest.mark.parametrize("args", [(None, 100.0), (0.7582, None), (0.7582, 0.0), (0.0, 100.0), (-1.0, 10.0)])
def test_a_missing_or_zero_input_is_not_a_price_of_zero(args):
    assert usd_per_million(*args) is None
    assert work_per_dollar(args[1], args[0]) is None


def test_price_performance_is_work_per_dollar_relative_to_the_baseline():
    # README §4: "1.39x more samples per dollar" needs Inf2 at ~78% of Trn1's samples/s.
    # (78.4 / 0.7582) / (100 / 1.34375) = 103.40 / 74.42 = 1.3895
    assert price_performance(78.4, 0.7582, 100.0, 1.34375) == pytest.approx(1.3895, abs=1e-4)
    # samples per dollar: 100/s * 3600 s / $1.34375 = 267,907
    assert work_per_dollar(100.0, 1.34375) == pytest.approx(267906.98, abs=0.01)
    assert price_performance(78.4, None, 100.0, 1.34375) is None


def test_training_budget_for_epochs_of_a_dataset():
    # 3 epochs of ImageNet-1k (1,281,167 images) at 6587.25 samples/s on trn1.32xlarge ($21.50/h):
    # 3,843,501 / 6587.25 = 583.48 s = 0.162077 h -> $3.4846; plus 1200 s of compile = $7.1667
    budget = training_budget(6587.25, 21.5, epochs=3, samples_per_epoch=1_281_167, compile_s=1200)
    assert budget.samples == 3_843_501
    assert budget.train_hours == pytest.approx(0.162077, abs=1e-6)
    assert budget.train_usd == pytest.approx(3.48465, abs=1e-5)
    assert budget.compile_usd == pytest.approx(7.16667, abs=1e-5)
    assert budget.total_usd == pytest.approx(3.48465 + 7.16667, abs=1e-4)
    assert budget.total_hours == pytest.approx(0.162077 + 1 / 3, abs=1e-5)
    unpriced = training_budget(6587.25, None, epochs=1, samples_per_epoch=1000)
    assert unpriced.train_hours is not None and unpriced.train_usd is None and unpriced.total_usd is None
    with pytest.raises(ValueError):
        training_budget(100.0, 1.0, epochs=0, samples_per_epoch=1000)


def test_compile_cost_and_break_even():
    # 30 minutes of compile on trn1.2xlarge: 0.5 h * $1.34375 = $0.671875
    assert usd_for_seconds(1800, 1.34375) == pytest.approx(0.671875)
    assert usd_for_seconds(0.0, 1.34375) == 0.0  # no compile costs nothing; an unknown one is N/A
    assert usd_for_seconds(None, 1.34375) is None
    # A: $2.00 compile, $0.50 per 1M; B: $0.50 compile, $1.00 per 1M.
    # 2.00 + 0.5e-6 n = 0.50 + 1e-6 n  ->  n = 1.50 / 0.5e-6 = 3,000,000 samples
    assert break_even_samples(2.0, 0.5, 0.5, 1.0) == pytest.approx(3_000_000)
    assert break_even_samples(0.5, 0.5, 2.0, 1.0) is None  # A is cheaper on both counts: never crosses
    assert break_even_samples(2.0, 1.5, 0.5, 1.0) is None  # A is dearer on both counts
    assert break_even_samples(2.0, None, 0.5, 1.0) is None


def test_cheapest_host_that_meets_latency_and_throughput_targets():
    options = [
        Candidate("inf2.xlarge b4", 4, 950.0, 8.85, 0.7582),
        Candidate("inf2.xlarge b8", 8, 1200.0, 14.0, 0.7582),
        Candidate("g5.xlarge b4", 4, 1100.0, 6.0, 1.006),
        Candidate("trn2 b4", 4, 5000.0, 2.0, None),  # no public on-demand price
        Candidate("cpu b4", 4, None, None, 0.34),
    ]
    choice = cheapest_meeting(options, max_p99_ms=10.0, min_throughput=900.0)
    assert choice.best is not None and choice.best.label == "inf2.xlarge b4"
    assert [c.label for c in choice.meeting] == ["inf2.xlarge b4", "g5.xlarge b4"]
    reasons = dict((c.label, why) for c, why in choice.rejected)
    assert "p99 14 ms > 10 ms" in reasons["inf2.xlarge b8"]
    assert reasons["trn2 b4"] == "no price"
    assert "throughput N/A" in reasons["cpu b4"] and "p99 N/A" in reasons["cpu b4"]
    assert cheapest_meeting(options, max_p99_ms=1.0).best is None


def _book() -> PriceBook:
    return PriceBook(snapshot=[
        PriceEntry("inf2.xlarge", "us-east-1", "on_demand", 0.7582, "catalog @abc", None, "snapshot"),
        PriceEntry("trn2.48xlarge", "us-east-2", "on_demand", None, "catalog @abc", None, "snapshot"),
    ])


def test_the_results_cost_block_for_inference_per_batch_size():
    result = {"workload": "infer", "env": {"instance_type": "inf2.xlarge", "region": "us-east-1"},
              "infer": [{"batch_size": 1, "throughput_per_s": 322.58, "compile_s": 36.0},
                        {"batch_size": 4, "throughput_per_s": None, "compile_s": None}]}
    cost = apply_cost(result, _book())["cost"]
    assert cost["instance_type"] == "inf2.xlarge" and cost["instance_type_from"] == "probe"
    assert cost["usd_per_hour"] == 0.7582 and cost["price_source"] == "catalog @abc"
    assert cost["price_date"] == "snapshot date unknown"
    rows = cost["usd_per_1m_inferences"]
    assert rows[0]["batch_size"] == 1 and round(rows[0]["usd_per_1m"], 2) == 0.65
    assert rows[0]["compile_usd"] == pytest.approx(36 / 3600 * 0.7582)  # $0.007582
    assert rows[1]["usd_per_1m"] is None and rows[1]["compile_usd"] is None


def test_the_results_cost_block_for_training_and_a_missing_price():
    result = {"workload": "train", "env": {"instance_type": "trn2.48xlarge", "region": "us-east-2"},
              "train": {"throughput_samples_per_s": 5000.0, "compile": {"seconds": 60.0}}}
    cost = apply_cost(result, _book())["cost"]
    assert cost["usd_per_hour"] is None and cost["usd_per_1m_samples"] is None
    assert cost["compile"] == {"seconds": 60.0, "usd": None}
    assert "no public on-demand price" in cost["price_note"]


def test_a_declared_type_prices_a_host_the_probe_could_not_identify_and_the_probe_wins_a_conflict():
    result = {"workload": "train", "env": {"instance_type": None, "region": None},
              "train": {"throughput_samples_per_s": 100.0, "compile": {"seconds": 0.0}}, "warnings": []}
    cost = apply_cost(result, _book(), declared_type="inf2.xlarge")["cost"]
    assert cost["instance_type_from"] == "declared" and cost["usd_per_hour"] == 0.7582
    assert cost["region"] == "us-east-1" and "region unknown" in cost["price_note"]
    # 0.7582 / 3600 / 100 * 1e6 = 2.10611
    assert cost["usd_per_1m_samples"] == pytest.approx(2.10611, abs=1e-5)

    result["env"] = {"instance_type": "inf2.xlarge", "region": "us-east-1"}
    apply_cost(result, _book(), declared_type="trn1.2xlarge")
    assert result["cost"]["instance_type"] == "inf2.xlarge"
    assert any("declares trn1.2xlarge but the host reports inf2.xlarge" in w for w in result["warnings"])

    unknown = apply_cost({"workload": "train", "env": {}, "train": {}}, _book())["cost"]
    assert unknown["usd_per_hour"] is None and "instance type unknown" in unknown["price_note"]
