"""``neuronbench runs set RUN --instance-type T``: a stored run that has no price gets one, everywhere at once."""
from __future__ import annotations

import csv
import io

import pytest

from app.paths import AppPaths
from app.services.store import RunStore
from tests.helpers import tiny_model_flags
from tests.reports.sample_store import populate

TRN1_USD_PER_HOUR = 1.34375  # trn1.2xlarge on-demand in us-east-1 in the shipped price book


@pytest.mark.slow
def test_a_run_without_an_instance_type_is_priced_once_declared(run_cli, data_dir, tmp_path):
    # A real tiny training run on this computer, which is not EC2: no instance type, so no price.
    out = run_cli("run", "--host", "local", "--workload", "train", *tiny_model_flags(), "--backend", "cpu",
                  "--workers", "0", "--batch-size", "4", "--steps", "4", "--warmup", "1", "--json")
    assert out.code == 0, out.stderr
    [result] = out.json()
    run_id = result["run_id"]
    assert result["cost"]["usd_per_hour"] is None
    assert "runs set RUN --instance-type T" in result["cost"]["price_note"]  # the note says how to price it
    [row] = run_cli("compare", run_id, "--json").json()["rows"]
    assert row["usd_per_hour"] is None and row["usd_per_1m"] is None

    # Refused in one sentence, with a non-zero exit, and nothing stored: a misspelt type, a region without a price.
    bad = run_cli("runs", "set", run_id, "--instance-type", "trn1.2xl")
    assert bad.code != 0 and bad.stderr.count("\n") == 1
    assert "'trn1.2xl' is not an instance type in the price book: did you mean trn1.2xlarge" in bad.stderr
    bad = run_cli("runs", "set", run_id, "--instance-type", "trn1.2xlarge", "--region", "eu-west-9")
    assert bad.code != 0 and bad.stderr.count("\n") == 1
    assert "trn1.2xlarge has no price in 'eu-west-9': the price book lists it in us-east-1" in bad.stderr
    assert run_cli("runs", "show", run_id, "--json").json()["result"]["cost"]["usd_per_hour"] is None

    # Declared with a unique prefix of the run id, as the other `runs` commands take it.
    out = run_cli("runs", "set", run_id[:-2], "--instance-type", "trn1.2xlarge", "--region", "us-east-1")
    assert out.code == 0, out.stderr
    assert f"run {run_id}: trn1.2xlarge (us-east-1), declared after the run" in out.stdout
    assert "$1.344/h trn1.2xlarge us-east-1 on-demand" in out.stdout

    shown = run_cli("runs", "show", run_id, "--json").json()
    cost = shown["result"]["cost"]
    throughput = result["train"]["throughput_samples_per_s"]
    assert cost["instance_type"] == "trn1.2xlarge" and cost["instance_type_from"] == "declared after the run"
    assert cost["usd_per_hour"] == TRN1_USD_PER_HOUR
    assert cost["usd_per_1m_samples"] == pytest.approx(TRN1_USD_PER_HOUR / 3600 / throughput * 1e6)
    assert shown["run"]["declared"]["source"] == "declared after the run"
    assert shown["result"]["train"] == result["train"]  # only the cost changed
    assert "declared after the run" in run_cli("runs", "show", run_id).stdout
    assert [r["instance_type"] for r in run_cli("runs", "list", "--json").json()["runs"]] == ["trn1.2xlarge"]

    # Compare and reports price it the same way, and say where the type came from.
    [row] = run_cli("compare", run_id, "--json").json()["rows"]
    assert row["usd_per_hour"] == TRN1_USD_PER_HOUR and row["instance_type_from"] == "declared after the run"
    assert row["usd_per_1m"] == pytest.approx(cost["usd_per_1m_samples"])
    assert "trn1.2xlarge (declared after the run)" in run_cli("compare", run_id).stdout
    report = tmp_path / "report.csv"
    assert run_cli("report", run_id, "--format", "csv", "--output", str(report)).code == 0
    [line] = list(csv.DictReader(io.StringIO(report.read_text())))
    assert (line["instance_type"], line["instance_type_from"], line["usd_per_hour"]) == \
        ("trn1.2xlarge", "declared after the run", repr(TRN1_USD_PER_HOUR))
    html = tmp_path / "report.html"
    assert run_cli("report", run_id, "--format", "html", "--output", str(html)).code == 0
    assert "instance trn1.2xlarge (declared after the run)" in html.read_text()

    # Durable: a fresh store connection reads the declaration back.
    with RunStore(AppPaths.resolve(data_dir).runs_db) as store:
        run = store.load(run_id)
    assert run.instance_type == "trn1.2xlarge" and run.declared["region"] == "us-east-1"


def test_a_run_whose_host_reported_its_type_is_not_declared_otherwise(run_cli, data_dir):
    ids = populate(AppPaths.resolve(data_dir))  # runs recorded event by event, their hosts reporting their types
    run_id = ids["trn1_train"][0]
    out = run_cli("runs", "set", run_id, "--instance-type", "inf2.xlarge")
    assert out.code != 0 and out.stderr.count("\n") == 1
    assert f"run {run_id} ran on a host that reported its own instance type, trn1.2xlarge" in out.stderr
    assert run_cli("runs", "show", run_id, "--json").json()["result"]["cost"]["instance_type"] == "trn1.2xlarge"
    out = run_cli("runs", "set", "nope-nope", "--instance-type", "inf2.xlarge")
    assert out.code != 0 and "no run 'nope-nope' in the store" in out.stderr
