"""What a benchmark on a launched instance cost (launch to terminate x price) reaches compare, reports and CSV."""
from __future__ import annotations

import csv
import io

import pytest

from app.cli.runs_text import format_compare
from app.core.compare import CompareOptions, compare_runs
from app.core.cost import apply_cost
from app.core.decision import summary
from app.reports.csv_report import render_csv
from app.reports.html import render_html
from app.reports.model import RunMaterial, build_report
from tests.core.runs import book, train_run


@pytest.fixture
def runs():
    launched = train_run("trn", "trn1.2xlarge", 400.0)
    launched.result["ec2"] = {"instance_id": "i-0abc1234def567890", "market": "on_demand", "launched_at": 1000.0,
                              "terminated_at": 1000.0 + 1800.0}
    apply_cost(launched.result, book())  # what the recorder stores when the run ends
    here = train_run("g5", "g5.xlarge", 150.0)
    return [launched, here]


def test_compare_rows_carry_the_benchmark_cost_of_launched_instances(runs):
    doc = compare_runs(runs, book(), CompareOptions())
    launched, here = doc["rows"]
    assert launched["instance_id"] == "i-0abc1234def567890" and launched["benchmark_s"] == 1800.0
    assert launched["benchmark_usd"] == pytest.approx(1.34375 / 2)
    assert here["instance_id"] is None and here["benchmark_usd"] is None
    text = format_compare(doc, [])
    assert "benchmark cost " + runs[0].run_id + " (trn, instance i-0abc1234def567890): $0.6719 for 1800 s" in text


def test_reports_show_what_the_benchmarks_cost(runs):
    doc = compare_runs(runs, book(), CompareOptions())
    report = build_report([RunMaterial(r, [], None) for r in runs], doc, "test", 1_795_000_000.0, summary(doc))
    html = render_html(report)
    assert "What the benchmarks cost" in html and "i-0abc1234def567890" in html and "$0.6719" in html
    rows = list(csv.DictReader(io.StringIO(render_csv(report))))
    assert [r["benchmark_usd"] for r in rows] == [repr(1.34375 / 2), "N/A"]
    assert rows[0]["instance_id"] == "i-0abc1234def567890"
