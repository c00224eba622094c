"""A sweep with one failed point is still a result (issue 28 part 3).

Real sweeps on this computer through the CLI and the real agent: an inference model (and a generating Llama)
whose forward raises torch's own OutOfMemoryError from batch 4 up, as a GPU does when the batch outgrows it.
The run is stored "partial" with the finished batch sizes kept and the failed one named with its sentence;
compare, the job projection, History and the Compare view use what finished.
"""
from __future__ import annotations

import pytest

from tests.conftest import DATA

pytestmark = pytest.mark.slow
MODELS = DATA / "models"
INFER = ["--workload", "infer", "--backend", "cpu", "--model", f"file:{MODELS / 'oom_at_batch_infer.py'}",
         "--batch-sizes", "1,2,4", "--warmup", "1", "--min-iters", "10", "--duration", "0.1"]


@pytest.fixture
def partial_run(run_cli) -> dict:
    assert run_cli("hosts", "add", "gpu-box", "--local", "--instance-type", "g5.xlarge").code == 0
    out = run_cli("run", "--host", "gpu-box", *INFER, "--json")
    assert out.code != 0  # a point failed: said on stderr, and in the exit status
    assert "run partial on gpu-box: out of memory during" in out.stderr
    [result] = out.json()
    return result


def test_an_oom_at_the_largest_batch_is_partial_and_compare_and_the_job_use_the_finished_sizes(partial_run, run_cli):
    result = partial_run
    assert result["status"] == "partial"
    rows = {row["batch_size"]: row for row in result["infer"]}
    assert rows[1]["throughput_per_s"] > 0 and rows[2]["throughput_per_s"] > 0
    assert rows[4]["error"]["kind"] == "oom" and rows[4]["error"]["message"].startswith("out of memory during")
    assert rows[4].get("throughput_per_s") is None
    listed = run_cli("runs", "list", "--json").json()["runs"]
    assert [r["status"] for r in listed] == ["partial"]
    shown = run_cli("runs", "show", result["run_id"]).stdout
    assert "partial: batch 4 failed: out of memory during" in shown and "the finished points are kept" in shown
    # compare and the job projection: the finished batch sizes, the failed one said apart
    run_id = result["run_id"]
    out = run_cli("compare", run_id, "--job-requests", "1000000", "--json")
    assert out.code == 0, out.stderr
    doc = out.json()
    assert [row["batch_size"] for row in doc["rows"]] == [1, 2]
    assert all(row["throughput"] > 0 and row["usd_per_1m"] > 0 for row in doc["rows"])
    [partial] = doc["partial"]
    assert partial["run_id"] == run_id and partial["label"] == "g5.xlarge"
    [failed] = partial["failed"]
    assert failed["point"] == "batch 4" and failed["kind"] == "oom"
    assert all(row["job"]["hours_cold"] > 0 for row in doc["rows"])  # the job priced on what finished
    text = run_cli("compare", run_id).stdout
    assert f"Run {run_id} on g5.xlarge is partial (batch 4 failed: out of memory during" in text
    assert "it is compared on the points that finished" in text


def test_a_generate_sweep_that_runs_out_of_memory_is_partial_too(run_cli):
    out = run_cli("run", "--host", "local", "--workload", "generate", "--backend", "cpu", "--model",
                  f"file:{MODELS / 'oom_at_batch.py'}", "--batch-sizes", "1,4", "--input-lens", "8", "--output-lens",
                  "3", "--warmup", "1", "--min-iters", "4", "--duration", "0.1", "--json")
    [result] = out.json()
    assert result["status"] == "partial"
    by_batch = {p["batch_size"]: p for p in result["generate"]}
    assert by_batch[1]["output_tok_s"] > 0 and by_batch[4]["error"]["kind"] == "oom"
    doc = run_cli("compare", result["run_id"], "--json").json()
    assert [row["batch_size"] for row in doc["rows"]] == [1]
    assert doc["partial"][0]["failed"][0]["point"] == "batch 4 · 8/3"
