"""Runs stored "failed" before "partial" existed read as partial when they kept finished points (issue 28 part 3)."""
from __future__ import annotations

from app.core.partial_runs import failed_points, settled_status
from app.services.store import RunStore

SPEC = {"workload": "infer", "model": "file:m.py", "batch_sizes": [1, 2, 8]}
ROW = {"batch_size": 1, "throughput_per_s": 100.0, "latency_ms": {"p50": 1.0, "p99": 2.0}}
OOM = {"kind": "oom", "message": "out of memory during compile: CUDA out of memory"}


def old_failed(rows: list[dict]) -> dict:
    """What an agent of before wrote: the finished sizes, the failure only in the Result's error."""
    return {"workload": "infer", "status": "failed", "spec": SPEC, "infer": rows, "error": OOM}


def test_an_old_failed_sweep_with_finished_sizes_reads_as_partial_with_the_unrun_size_named(tmp_path):
    rows = [ROW, dict(ROW, batch_size=2, throughput_per_s=180.0)]
    with RunStore(tmp_path / "runs.db") as store:
        for run_id, result in (("20261128-000001-aaaaaa", old_failed(rows)),
                               ("20261128-000002-bbbbbb", old_failed([]))):
            store.begin_run(run_id, "box", SPEC)
            store.finish_run(run_id, result)
        partial, failed = store.get_run("20261128-000001-aaaaaa"), store.get_run("20261128-000002-bbbbbb")
        assert partial.status == "partial" and partial.result["status"] == "partial"
        assert failed.status == "failed"  # nothing finished: still a failure
        assert [r.run_id for r in store.list_runs(status="partial")] == ["20261128-000001-aaaaaa"]
    [point] = failed_points(partial.result)
    assert point["point"] == "batch 8" and point["message"] == OOM["message"]


def test_a_failed_run_whose_every_size_finished_is_not_partial():
    """A failure after the sweep (a full disk at the end) is the run's, not a point's."""
    rows = [dict(ROW, batch_size=b) for b in (1, 2, 8)]
    assert settled_status("failed", old_failed(rows)) == "failed"
    assert settled_status("cancelled", old_failed(rows[:1])) == "cancelled"
