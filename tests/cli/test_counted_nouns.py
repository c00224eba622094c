"""A count and its noun agree in the CLI's output: "1 event", "2 events", never "1 events"."""
from __future__ import annotations

from app.cli import main
from app.core.numbers import counted
from app.core.specs import spec_summary
from app.paths import AppPaths
from app.services.store import RunStore
from remote_agent.protocol import RunSpec, make_event

RUN_ID = "20261124-101500-c0ffee"


def test_counted_picks_the_noun_by_the_number():
    assert [counted(n, "event") for n in (0, 1, 2)] == ["0 events", "1 event", "2 events"]
    assert counted(1, "telemetry bucket") == "1 telemetry bucket" and counted(3, "child", "children") == "3 children"


def test_runs_show_of_a_run_with_one_event_says_1_event(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEURONBENCH_DATA_DIR", str(tmp_path))
    with RunStore(AppPaths.resolve(str(tmp_path)).runs_db) as store:
        store.begin_run(RUN_ID, "local", {"workload": "train", "model": "vit_tiny_patch16_224"})
        store.append_event(RUN_ID, make_event("hello", 1, 1.0, agent_version="1", protocol_version=1, pid=1,
                                              python="3.10", run_id=RUN_ID))
    assert main(["runs", "show", RUN_ID]) == 0
    out = capsys.readouterr().out
    assert "stored      1 event, 0 telemetry buckets" in out, out


def test_a_one_step_or_one_request_spec_reads_in_the_singular():
    assert "· 1 step ·" in spec_summary(RunSpec(workload="train", steps=1, warmup=0))
    assert "≥1 request and" in spec_summary(RunSpec(workload="infer", min_iters=1))
