"""What the benchmark itself cost, on any priced host, and the user's whole job, through the real CLI."""
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
def test_a_local_run_declared_as_an_instance_carries_what_the_benchmark_cost(run_cli, data_dir, tmp_path):
    # This computer named as a trn1.2xlarge (e.g. NeuronBench running on the instance itself): not launched by
    # NeuronBench, yet priced, so the run's wall time from start to end is what the benchmark cost.
    out = run_cli("hosts", "add", "here", "--local", "--instance-type", "trn1.2xlarge", "--region", "us-east-1")
    assert out.code == 0, out.stderr
    out = run_cli("run", "--host", "here", "--workload", "train", *tiny_model_flags(), "--backend", "cpu",
                  "--workers", "0", "--batch-size", "4", "--steps", "4", "--warmup", "1", "--json")
    assert out.code == 0, out.stderr
    [result] = out.json()
    bench = result["cost"]["benchmark"]
    with RunStore(AppPaths.resolve(data_dir).runs_db) as store:
        run = store.load(result["run_id"])
    wall = run.ended_at - run.started_at  # the stored run's first event (hello) to its end, setup included
    assert bench["basis"] == "run start to end" and bench["seconds"] == pytest.approx(wall)
    assert bench["seconds"] > 0 and bench["usd_per_hour"] == TRN1_USD_PER_HOUR
    assert bench["usd"] == pytest.approx(wall / 3600 * TRN1_USD_PER_HOUR)

    # The summary of `runs show`, compare (text, JSON) and the reports say it.
    assert "benchmark   $" in run_cli("runs", "show", result["run_id"]).stdout
    [row] = run_cli("compare", result["run_id"], "--json").json()["rows"]
    assert row["benchmark_s"] == pytest.approx(wall) and row["benchmark_usd"] == pytest.approx(bench["usd"])
    assert f"benchmark cost {result['run_id']} (here): $" in run_cli("compare", result["run_id"]).stdout
    report = tmp_path / "report.csv"
    assert run_cli("report", result["run_id"], "--format", "csv", "--output", str(report)).code == 0
    [line] = list(csv.DictReader(io.StringIO(report.read_text())))
    assert float(line["benchmark_usd"]) == pytest.approx(bench["usd"])
    html = tmp_path / "report.html"
    assert run_cli("report", result["run_id"], "--format", "html", "--output", str(html)).code == 0
    assert "What the benchmarks cost" in html.read_text()


def test_compare_prices_the_users_whole_job_and_refuses_a_bad_size_in_one_sentence(run_cli, data_dir, tmp_path):
    ids = populate(AppPaths.resolve(data_dir))  # trn1.2xlarge: a cold compile (1840 s), then two cached (14, 13.5 s)
    runs = ids["trn1_train"] + ids["inf2_infer"]
    out = run_cli("compare", *runs, "--job-epochs", "3", "--dataset-samples", "1281167", "--job-requests", "10M",
                  "--json")
    assert out.code == 0, out.stderr
    doc = out.json()
    train = [r for r in doc["rows"] if r["workload"] == "train"]
    assert len(train) == 3
    for row in train:
        hours = (3 * 1_281_167 / row["throughput"] + 1840.0) / 3600
        assert row["job_hours"] == pytest.approx(hours)
        assert row["job_usd"] == pytest.approx(hours * TRN1_USD_PER_HOUR)
        # The compile cache's own log lines tell the warm start apart: the median of the two cached compiles.
        assert row["job"]["compile_warm_s"] == pytest.approx(13.75)
    infer = {r["batch_size"]: r for r in doc["rows"] if r["workload"] == "infer"}
    assert infer[16]["job_hours"] == pytest.approx((1e7 / 1210.0 + 40.0) / 3600)
    assert any(s.startswith("Your job of 3,843,501 samples (3 epochs × 1,281,167) costs least on trn1.2xlarge")
               for s in doc["summary"])

    text = run_cli("compare", *runs, "--job-samples", "3843501").stdout
    assert "your job: 3,843,501 samples" in text and "SPOT WARM" in text
    report = tmp_path / "job.csv"
    assert run_cli("report", *runs, "--job-samples", "3843501", "--format", "csv", "--output", str(report)).code == 0
    lines = [line for line in csv.DictReader(io.StringIO(report.read_text())) if line["workload"] == "train"]
    assert [float(line["job_usd"]) for line in lines] == pytest.approx([r["job_usd"] for r in train])
    page = tmp_path / "job.html"
    assert run_cli("report", *runs, "--job-samples", "3843501", "--format", "html", "--output", str(page)).code == 0
    assert "Your job" in page.read_text() and "vit_base_patch16_224 training: 3,843,501 samples" in page.read_text()

    for args, sentence in ((("--job-samples", "-5"), "--job-samples must be a count above 0 (e.g. 1281167, 1.2M or "
                                                     "3e6), not '-5'"),
                           (("--job-epochs", "3"), "a job given in epochs needs both --job-epochs E and "
                                                   "--dataset-samples N"),
                           (("--job-requests", "1000", *ids["trn1_train"][:1]),
                            "--job-requests sizes an inference or generate job, but none of the runs compared is "
                            "an inference or generate run")):
        target = list(args[2:]) or runs
        bad = run_cli("compare", *target, *args[:2])
        assert bad.code != 0 and bad.stderr.count("\n") == 1, bad.stderr
        assert sentence in bad.stderr
