"""--target-ci and FLOPs end to end: the real CLI, the real agent, real torch and torch-xla (CPU PJRT).

Whether a target is reached depends on this machine's noise, so the runs are checked against the
rule replayed over their own step events: the agent must stop exactly where the rule says (or at the
cap, saying so), every rank at the same step.
"""
from __future__ import annotations

import pytest

from remote_agent.protocol import TARGET_CI_MIN_STEPS, iter_events
from remote_agent.stopping import TrainingStop
from tests.e2e.test_cluster_runs import nodes  # noqa: F401  (the two-node fixture: sshd on 127.0.0.1 and .2)
from tests.helpers import tiny_model_flags

pytestmark = pytest.mark.slow

TRAIN = ["run", "--host", "local", "--workload", "train", *tiny_model_flags(), "--batch-size", "8",
         "--workers", "0", "--json"]


def events_of(path) -> list[dict]:
    return list(iter_events(path.read_bytes().splitlines()))


def replayed_stop(steps: list[dict], warmup: int, target: float) -> int | None:
    rule = TrainingStop(target, warmup)
    return next((s["i"] for s in steps if rule.add(s["i"], s["dt_s"], s["compiled"])), None)


def check_training_stop(result: dict, events: list[dict], target: float, cap: int, warmup: int) -> None:
    train = result["train"]
    steps = [e for e in events if e["type"] == "step"]
    assert train["target_ci_pct"] == target
    expected = replayed_stop(steps, warmup, target)
    if expected is not None:  # the figure was known before the cap: the run ended right there
        assert train["stopped_by"] == "target_ci" and train["steps_total"] == expected < cap
        assert train["ci_pct"] <= target and train["steps_measured"] >= TARGET_CI_MIN_STEPS
        assert not [w for w in result["warnings"] if "target was not reached" in w]
    else:
        assert train["stopped_by"] == "steps" and train["steps_total"] == cap
        assert [w for w in result["warnings"] if w.startswith(f"the ±{target:g} % target was not reached")]
    # The live figure: every step once six steady steps are in carries the interval so far, ending on the Result's.
    with_ci = [s for s in steps if "ci_pct" in s]
    assert with_ci and with_ci[-1]["ci_pct"] == pytest.approx(train["ci_pct"])


def test_cpu_training_stops_once_the_median_is_known_and_has_no_mfu_without_a_peak(run_cli, tmp_path):
    path = tmp_path / "events.jsonl"
    out = run_cli(*TRAIN, "--backend", "cpu", "--steps", "400", "--warmup", "5", "--target-ci", "20",
                  "--events", str(path))
    assert out.code == 0, out.stderr
    result = out.json()[0]
    assert result["status"] == "ok"
    check_training_stop(result, events_of(path), 20.0, 400, 5)

    train = result["train"]
    assert train["flops_per_sample"] > 0 and train["flops_counted_on"] == "meta device, batch 8"
    assert train["achieved_tflops"] == pytest.approx(train["flops_per_sample"] * train["throughput_samples_per_s"]
                                                     / 1e12)
    assert train["mfu"] is None and train["mfu_basis"]["missing"] == "no known peak for a CPU"


def test_a_target_not_reached_within_the_steps_is_a_warning(run_cli):
    out = run_cli(*TRAIN, "--backend", "cpu", "--steps", "40", "--warmup", "5", "--target-ci", "0.01")
    assert out.code == 0, out.stderr
    result = out.json()[0]
    assert result["train"]["stopped_by"] == "steps" and result["train"]["steps_total"] == 40
    assert any(w.startswith("the ±0.01 % target was not reached within --steps 40: the median step time's 95% "
                            "interval is ±") for w in result["warnings"])


def test_xla_training_stops_on_steps_after_the_last_compile(run_cli, tmp_path):
    path = tmp_path / "events.jsonl"
    out = run_cli(*TRAIN, "--backend", "xla", "--steps", "200", "--warmup", "1", "--target-ci", "25",
                  "--events", str(path))
    assert out.code == 0, out.stderr
    result = out.json()[0]
    check_training_stop(result, events_of(path), 25.0, 200, 1)
    train = result["train"]
    assert train["compile"]["steps"] and train["window"][0] > max(train["compile"]["steps"])
    assert train["flops_per_sample"] > 0 and train["mfu_basis"]["missing"] == "no known peak for a CPU"


def test_two_processes_leave_the_loop_at_the_same_step(run_cli, tmp_path):
    path = tmp_path / "events.jsonl"
    out = run_cli(*TRAIN, "--backend", "cpu", "--nproc", "2", "--steps", "400", "--warmup", "5",
                  "--target-ci", "30", "--events", str(path), timeout=300)
    # Ranks that disagreed would wait in the next all-reduce for one that left: the run would never end ok.
    assert out.code == 0, out.stderr
    result = out.json()[0]
    train = result["train"]
    assert result["status"] == "ok" and train["world_size"] == 2 and train["global_batch"] == 16
    assert train["steps_measured"] == train["steps_total"] - 5  # torchrun's two ranks: the window after warm-up
    check_training_stop(result, events_of(path), 30.0, 400, 5)


def test_node_0_decides_and_both_nodes_stop_at_its_step(run_cli, ssh_env, nodes, tmp_path):  # noqa: F811
    path = tmp_path / "events.jsonl"
    out = run_cli("run", "--nodes", "node-a,node-b", "--workload", "train", "--backend", "cpu", *tiny_model_flags(),
                  "--batch-size", "4", "--workers", "0", "--steps", "300", "--warmup", "3", "--target-ci", "30",
                  "--accept-new-host-key", "--events", str(path), "--json", env=ssh_env, timeout=400)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["status"] == "ok" and result["train"]["nodes"] == 2
    assert all(node["status"] == "ok" for node in result["nodes"])  # node 1 left cleanly, at node 0's step
    check_training_stop(result, [e for e in events_of(path) if e.get("node", 0) == 0], 30.0, 300, 3)


def test_inference_stops_each_batch_size_once_its_throughput_is_known(run_cli, tmp_path):
    path = tmp_path / "events.jsonl"
    out = run_cli("run", "--host", "local", "--workload", "infer", *tiny_model_flags(), "--backend", "cpu",
                  "--batch-sizes", "1,4", "--warmup", "3", "--min-iters", "100", "--duration", "20",
                  "--target-ci", "25", "--events", str(path), "--json")
    assert out.code == 0, out.stderr
    result = out.json()[0]
    for row in result["infer"]:
        assert row["target_ci_pct"] == 25.0 and row["iterations"] >= 100
        if row["stopped_by"] == "target_ci":
            assert row["ci_pct"] <= 25.0 and row["wall_s"] < 20.0
        else:
            assert row["stopped_by"] == "duration" and row["wall_s"] >= 20.0
            assert [w for w in result["warnings"] if w.startswith(f"batch {row['batch_size']}: the ±25 % target")]
        assert row["flops_per_sample"] > 0 and row["mfu"] is None
        assert row["mfu_basis"]["missing"] == "no known peak for a CPU"
    windows = [e for e in events_of(path) if e["type"] == "latency"]
    assert any("ci_pct" in w for w in windows)  # the interval as it shrinks, for the live view


@pytest.mark.parametrize(("flags", "sentence"), [
    (["--steps", "20", "--warmup", "5", "--target-ci", "2"],
     "neuronbench: error: --target-ci 2: --steps (20) leaves 15 after --warmup (5), and a stop rests on at least 30 "
     "steady steps; raise steps, the most it may run"),
    (["--target-ci", "-1"],
     "neuronbench: error: --target-ci must be a percentage above 0 and at most 50 (e.g. 2 for ±2 %), not -1.0"),
])
def test_a_target_that_cannot_work_is_refused_in_one_sentence(run_cli, flags, sentence):
    out = run_cli(*TRAIN, "--backend", "cpu", *flags)
    assert out.code != 0 and out.stderr.strip() == sentence
