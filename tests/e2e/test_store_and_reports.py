"""Real local runs through the CLI land in the run store, priced; runs/compare/report work on them.

The probe learns its instance type from an IMDSv2 stand-in on loopback
(tests/agent/imds_server.py), so this computer's runs are priced as inf2.xlarge
and trn1.2xlarge would be: the same path an EC2 host takes.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from app.services.store import RunStore
from remote_agent import runner
from tests.agent.imds_server import ImdsServer
from tests.conftest import PYTHON, REPO
from tests.helpers import paced_model_flags, tiny_model_flags

pytestmark = pytest.mark.slow

INFER = ["run", "--host", "local", "--workload", "infer", *tiny_model_flags(), "--backend", "cpu",
         "--batch-sizes", "1,2", "--duration", "0.3", "--min-iters", "30", "--warmup", "2", "--json"]


def _run_as(run_cli, cli_env, instance_type: str, *args: str):
    with ImdsServer(instance_type=instance_type, region="us-east-1") as imds:
        out = run_cli(*args, env=dict(cli_env, NEURONBENCH_IMDS_ENDPOINT=imds.url))
    assert out.code == 0, out.stderr
    [result] = out.json()
    return result


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """One inference sweep priced as inf2.xlarge and one as trn1.2xlarge, through `neuronbench run`."""
    from tests.conftest import CliResult

    data = tmp_path_factory.mktemp("e2e-data")
    env = dict(os.environ, NEURONBENCH_DATA_DIR=str(data))

    def run_cli(*args, env=env, timeout=240):
        proc = subprocess.run([PYTHON, "-m", "app", *args], capture_output=True, text=True, timeout=timeout,
                              env=env, cwd=REPO)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    inf2 = _run_as(run_cli, env, "inf2.xlarge", *INFER, "--events", str(data / "inf2-events.jsonl"))
    trn1 = _run_as(run_cli, env, "trn1.2xlarge", *INFER)
    return run_cli, data, inf2, trn1


def test_a_finished_run_carries_its_cost_block(two_runs):
    _, _, inf2, _ = two_runs
    cost = inf2["cost"]
    assert cost["instance_type"] == "inf2.xlarge" and cost["instance_type_from"] == "probe"
    assert cost["usd_per_hour"] == 0.7582 and cost["price_date"] == "snapshot date unknown"
    for row, measured in zip(cost["usd_per_1m_inferences"], inf2["infer"], strict=True):
        assert row["batch_size"] == measured["batch_size"]
        assert row["usd_per_1m"] == pytest.approx(0.7582 / 3600 / measured["throughput_per_s"] * 1e6)


def test_runs_list_and_show_read_the_store(two_runs):
    run_cli, data, inf2, trn1 = two_runs
    listed = run_cli("runs", "list", "--json").json()["runs"]
    assert [r["run_id"] for r in listed] == [trn1["run_id"], inf2["run_id"]]  # newest first
    assert {r["status"] for r in listed} == {"ok"}
    assert {r["instance_type"] for r in listed} == {"inf2.xlarge", "trn1.2xlarge"}
    text = run_cli("runs", "list")
    assert inf2["run_id"] in text.stdout and "inf2.xlarge" in text.stdout

    shown = run_cli("runs", "show", inf2["run_id"][:-2], "--json").json()  # a unique prefix is enough
    assert shown["result"] == inf2  # the stored Result is the one `run --json` printed
    assert shown["run"]["env"]["instance_type"] == "inf2.xlarge"
    detail = run_cli("runs", "show", inf2["run_id"])
    assert "$0.7582/h inf2.xlarge us-east-1 on-demand" in detail.stdout and "per 1M inferences" in detail.stdout

    # Every raw event was stored, the same stream `--events` wrote.
    stored = run_cli("runs", "show", inf2["run_id"], "--events").stdout.splitlines()
    written = (data / "inf2-events.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in stored] == [json.loads(line) for line in written]


def test_compare_prices_both_runs_against_the_baseline(two_runs):
    run_cli, _, inf2, trn1 = two_runs
    doc = run_cli("compare", inf2["run_id"], trn1["run_id"], "--baseline", trn1["run_id"], "--json").json()
    assert doc["baseline"] == trn1["run_id"]
    assert len(doc["rows"]) == 4
    by = {(r["instance_type"], r["batch_size"]): r for r in doc["rows"]}
    for batch in (1, 2):
        mine, base = by[("inf2.xlarge", batch)], by[("trn1.2xlarge", batch)]
        assert mine["speedup_vs_baseline"] == pytest.approx(mine["throughput"] / base["throughput"])
        assert mine["price_performance_vs_baseline"] == pytest.approx(
            (mine["throughput"] / 0.7582) / (base["throughput"] / 1.34375))
    assert any(s.startswith("inf2.xlarge serves vit_tiny_patch16_224 at") for s in doc["summary"])
    table = run_cli("compare", inf2["run_id"], trn1["run_id"])
    assert table.code == 0 and "PRICE-PERF" in table.stdout and "snapshot date unknown" in table.stdout


@pytest.mark.parametrize("fmt", ["html", "pdf", "csv", "json"])
def test_every_report_format_is_written(two_runs, tmp_path, fmt):
    run_cli, _, inf2, trn1 = two_runs
    path = tmp_path / f"report.{fmt}"
    out = run_cli("report", inf2["run_id"], trn1["run_id"], "--format", fmt, "--output", str(path))
    assert out.code == 0, out.stderr
    assert path.stat().st_size > 0 and oct(path.stat().st_mode & 0o077) != "0o0"  # readable by others too
    if fmt == "json":
        assert json.loads(path.read_text())["schema"] == "neuronbench.report/1"
    elif fmt == "csv":
        assert len(path.read_text().splitlines()) == 1 + 4
    elif fmt == "html":
        assert path.read_text().startswith("<!DOCTYPE html>")
    else:
        text = subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout
        assert "Decision summary" in text and "inf2.xlarge" in text


def test_an_app_killed_mid_run_keeps_every_event_and_shows_the_run_unfinished(cli_env, app_paths):
    """SIGKILL `neuronbench run` while it streams; the store keeps what arrived; the run reads as unfinished."""
    # The paced model (tests/data/models/paced.py): the run goes on after the kill until cancelled, at almost no CPU.
    args = ["run", "--host", "local", "--workload", "train", *paced_model_flags(), "--backend", "cpu",
            "--batch-size", "4", "--steps", "400", "--warmup", "1", "--workers", "0"]
    proc = subprocess.Popen([PYTHON, "-m", "app", *args], env=cli_env, cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    run_id = None
    seen = 0
    try:
        with RunStore(app_paths.runs_db) as store:
            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:  # wait for a few training steps to be stored
                runs = store.list_runs()
                if runs:
                    run_id = runs[0].run_id
                    seen = sum(1 for _ in store.events(run_id, types=("step",)))
                    if seen >= 3:
                        break
                time.sleep(0.2)
            assert run_id and seen >= 3, "the run never stored three steps"
            before = store.event_count(run_id)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if run_id:  # the detached supervisor outlives the app by design: stop it
            old = os.environ.get("NEURONBENCH_AGENT_HOME")
            os.environ["NEURONBENCH_AGENT_HOME"] = str(app_paths.local_agent_home)
            try:
                runner.cancel(run_id, grace_s=10)
            finally:
                if old is None:
                    os.environ.pop("NEURONBENCH_AGENT_HOME", None)
                else:
                    os.environ["NEURONBENCH_AGENT_HOME"] = old

    with RunStore(app_paths.runs_db) as store:
        run = store.get_run(run_id)
        assert run.status == "unfinished"
        assert run.event_count >= before
        seqs = [e["seq"] for e in store.events(run_id)]
        assert seqs == list(range(1, len(seqs) + 1))  # nothing received was lost
        assert store.last_seq(run_id) == len(seqs)
