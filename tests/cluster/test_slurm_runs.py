"""One training run on two nodes of a real Slurm (tests/cluster/slurm_cluster.py): sbatch + srun + torchrun,
submitted by the CLI over SSH to the login node, as a user with a Slurm cluster would."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remote_agent.protocol import TARGET_CI_MIN_STEPS
from tests.conftest import REPO
from tests.e2e.conftest import add_host, remote_profile
from tests.e2e.test_cluster_runs import run_processes
from tests.helpers import paced_model_flags, tiny_model_flags

pytestmark = pytest.mark.slow

TRAIN = ["--workload", "train", "--backend", "cpu", *tiny_model_flags(), "--batch-size", "4", "--workers", "0",
         "--nproc", "1"]
# The paced model (tests/data/models/paced.py, ~0.05 s a step at almost no CPU) for the runs a test cancels, cuts
# or re-attaches, and for the target: its steady steps make the median known soon after the 30-step floor.
PACED = ["--workload", "train", "--backend", "cpu", *paced_model_flags(), "--batch-size", "4", "--workers", "0",
         "--nproc", "1"]


def add_slurm_host(data_dir: Path, slurm, name: str = "hpc", **settings) -> None:
    from app.core.slurm import SlurmSettings

    add_host(data_dir, remote_profile(slurm.login, name, slurm=SlurmSettings(**settings)))


def read_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")] \
        if path.exists() else []


def start_cli(env: dict[str, str], tmp_path: Path, *args: str) -> subprocess.Popen:
    """``neuronbench ARGS`` as a process of its own (to interrupt or kill it mid-run)."""
    return subprocess.Popen([sys.executable, "-m", "app", *args], cwd=REPO, env=env, text=True,
                            stdout=open(tmp_path / "cli.out", "w"), stderr=open(tmp_path / "cli.err", "w"))


def wait_for(what: str, ready, proc: subprocess.Popen, tmp_path: Path, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{what} never came: {(tmp_path / 'cli.err').read_text()}")
        time.sleep(0.1)


def node_processes(run_id: str) -> list[int]:
    """Live processes of the run on any node: the agents' marked processes and the srun-started node agents."""
    found = set(run_processes([f"{run_id}-n0", f"{run_id}-n1"]))
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and run_id.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                found.add(int(name))
        except OSError:
            continue
    return sorted(found)


def job_state(slurm, job_id: str, timeout: float = 60) -> str:
    """The job's final state (after Slurm's COMPLETING, while slurmd cleans up on the nodes)."""
    deadline = time.monotonic() + timeout
    while True:
        shown = slurm.command("scontrol", "show", "job", job_id).stdout
        state = shown.split("JobState=", 1)[1].split()[0] if "JobState=" in shown else ""
        if state not in ("", "COMPLETING", "RUNNING", "PENDING") or time.monotonic() > deadline:
            return state
        time.sleep(0.2)


def finish(proc: subprocess.Popen, tmp_path: Path, timeout: float = 120) -> tuple[int, list[dict], str]:
    code = proc.wait(timeout=timeout)
    out = (tmp_path / "cli.out").read_text()
    return code, json.loads(out) if out.strip() else [], (tmp_path / "cli.err").read_text()


def test_two_slurm_nodes_train_as_one_run_of_world_size_two(run_cli, ssh_env, slurm, data_dir, tmp_path):
    add_slurm_host(data_dir, slurm, partition="bench")
    events_path = tmp_path / "events.jsonl"
    out = run_cli("run", "--host", "hpc", "--nnodes", "2", *TRAIN, "--steps", "6", "--warmup", "2",
                  "--accept-new-host-key", "--events", str(events_path), "--json", env=ssh_env, timeout=300)
    assert out.code == 0, out.stderr + slurm.log_tail()
    [result] = out.json()
    assert result["status"] == "ok" and result["host"] == "hpc"
    train = result["train"]
    assert train["nodes"] == 2 and train["world_size"] == 2 and train["global_batch"] == 8
    assert train["steps_measured"] == 4 and train["throughput_samples_per_s"] > 0
    assert [n["status"] for n in result["nodes"]] == ["ok", "ok"]
    assert [n["ranks"] for n in result["nodes"]] == [[0], [1]]
    job_id = result["slurm"]["job_id"]
    assert job_id.isdigit() and result["slurm"]["nodes"] == "n[1-2]"

    events = read_events(events_path)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    hello = events[0]
    assert hello["type"] == "hello" and hello["slurm"]["job_id"] == job_id
    steps = [e for e in events if e["type"] == "step"]
    assert len(steps) == 6 and {e["node"] for e in steps} == {0} and {e["samples"] for e in steps} == {8}
    assert {e["node"] for e in events if e["type"] == "sample"} == {0, 1}
    assert events[-1]["type"] == "end" and events[-1]["status"] == "ok"
    # Each node was a Slurm task on its own node, and the master was the first node's address, not its name.
    probes = {e["node"]: e for e in events if e["type"] == "probe"}
    assert set(probes) == {0, 1}
    assert f"Submitted as Slurm job {job_id}".lower() in out.stderr.lower()
    log = (slurm.login.home / ".cache" / "neuronbench" / "runs" / result["run_id"] / f"slurm-{job_id}.out")
    assert "master n1 at 127.0.0.2" in log.read_text()
    assert job_state(slurm, job_id) == "COMPLETED"
    assert "NumNodes=2" in slurm.command("scontrol", "show", "job", job_id).stdout

    stored = run_cli("runs", "show", result["run_id"], "--json", env=ssh_env).json()
    assert stored["run"]["status"] == "ok" and stored["result"]["train"]["nodes"] == 2


def test_with_a_target_node_0_decides_and_both_slurm_nodes_leave_at_its_step(run_cli, ssh_env, slurm, data_dir,
                                                                             tmp_path):
    add_slurm_host(data_dir, slurm, partition="bench")
    events_path = tmp_path / "events.jsonl"
    # ±50 %: the loosest target, known soon after the 30 steady steps a stop rests on; 300 steps the cap.
    out = run_cli("run", "--host", "hpc", "--nnodes", "2", *PACED, "--steps", "300", "--warmup", "2",
                  "--target-ci", "50", "--accept-new-host-key", "--events", str(events_path), "--json",
                  env=ssh_env, timeout=300)
    assert out.code == 0, out.stderr + slurm.log_tail()
    [result] = out.json()
    train = result["train"]
    assert result["status"] == "ok" and train["nodes"] == 2 and train["world_size"] == 2
    # Node 0 stopped on the target, after the floor and before the cap; both nodes ended ok (a node still
    # stepping would have waited in an all-reduce for ranks that had gone).
    assert train["stopped_by"] == "target_ci" and train["target_ci_pct"] == 50 and train["ci_pct"] <= 50
    assert train["steps_measured"] >= TARGET_CI_MIN_STEPS and train["steps_total"] < 300
    assert [n["status"] for n in result["nodes"]] == ["ok", "ok"]
    events = read_events(events_path)
    steps = [e for e in events if e["type"] == "step"]
    assert steps[-1]["i"] == train["steps_total"] and {e["node"] for e in steps} == {0}
    # Each node's own line: it left the loop at node 0's step.
    left = {e["node"]: e["message"] for e in events if e["type"] == "log" and " left at step " in e["message"]}
    assert left == {0: f"rank 0 of 2 left at step {train['steps_total']}: rank 0 knows the figure (--target-ci)",
                    1: f"rank 1 of 2 left at step {train['steps_total']}: rank 0 knows the figure (--target-ci)"}
    assert job_state(slurm, result["slurm"]["job_id"]) == "COMPLETED"


def test_slurm_refusing_the_job_is_one_sentence_with_its_own_reason_and_a_stored_failed_run(
        run_cli, ssh_env, slurm, data_dir):
    add_slurm_host(data_dir, slurm, partition="nosuch")
    out = run_cli("run", "--host", "hpc", "--nnodes", "2", *TRAIN, "--steps", "4", "--warmup", "1",
                  "--accept-new-host-key", "--json", env=ssh_env, timeout=120)
    assert out.code != 0 and out.stdout.strip(), out.stderr
    [result] = out.json()
    assert result["status"] == "failed"
    message = result["error"]["message"]
    assert message.startswith("Slurm refused the job on partition nosuch:")
    assert "Invalid partition name specified" in message  # Slurm's own words
    assert "Invalid partition name specified" in out.stderr
    listed = run_cli("runs", "list", "--json", env=ssh_env).json()
    assert [(r["run_id"], r["status"]) for r in listed["runs"]] == [(result["run_id"], "failed")]
    assert not slurm.jobs()


def test_a_job_waiting_for_nodes_shows_queued_with_slurms_reason_and_ctrl_c_takes_it_out_of_the_queue(
        ssh_env, slurm, data_dir, tmp_path):
    add_slurm_host(data_dir, slurm)
    blocker = slurm.command("sbatch", "--parsable", "--exclusive", "--nodes=2", "--job-name=other-user",
                            "--output=/dev/null", "--wrap", "sleep 300").stdout.strip()
    assert blocker.isdigit()
    events_path = tmp_path / "events.jsonl"
    proc = start_cli(ssh_env, tmp_path, "run", "--host", "hpc", "--nnodes", "2", *TRAIN, "--steps", "4",
                     "--warmup", "1", "--accept-new-host-key", "--events", str(events_path), "--json")
    try:
        wait_for("queued (Resources)", lambda: any(e.get("slurm_state") == "queued (Resources)"
                                                   for e in read_events(events_path)), proc, tmp_path)
        job_id = read_events(events_path)[0]["slurm"]["job_id"]
        assert "PENDING" in slurm.command("squeue", "-h", "-j", job_id, "-o", "%T").stdout
        proc.send_signal(signal.SIGINT)
        code, results, stderr = finish(proc, tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
        slurm.command("scancel", blocker)
    assert f"Slurm job {job_id}: queued (Resources)" in stderr  # shown live, as Slurm says it
    assert code != 0
    [result] = results
    assert result["status"] == "cancelled" and result["slurm"]["job_id"] == job_id
    assert job_state(slurm, job_id) == "CANCELLED"
    events = read_events(events_path)
    assert events[-1]["type"] == "end" and events[-1]["status"] == "cancelled"


def test_cancel_stops_the_job_on_every_node_and_leaves_no_process(ssh_env, run_cli, slurm, data_dir, tmp_path):
    add_slurm_host(data_dir, slurm)
    events_path = tmp_path / "events.jsonl"
    proc = start_cli(ssh_env, tmp_path, "run", "--host", "hpc", "--nnodes", "2", *PACED, "--steps", "100000",
                     "--warmup", "1", "--accept-new-host-key", "--events", str(events_path), "--json")
    try:
        wait_for("three steps", lambda: sum(e["type"] == "step" for e in read_events(events_path)) >= 3,
                 proc, tmp_path)
        hello = read_events(events_path)[0]
        run_id, job_id = hello["run_id"], hello["slurm"]["job_id"]
        assert len(node_processes(run_id)) >= 4  # on each node: the agent and its torchrun, at least
        out = run_cli("runs", "cancel", run_id, env=ssh_env)  # from another process, as a user would
        assert out.code == 0, out.stderr
        assert f"scancel {job_id}" in out.stderr
        code, results, _stderr = finish(proc, tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
    [result] = results
    assert code != 0 and result["status"] == "cancelled"
    deadline = time.monotonic() + 30
    while node_processes(run_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert node_processes(run_id) == []
    assert job_state(slurm, job_id) == "CANCELLED"
    stored = run_cli("runs", "show", run_id, "--json", env=ssh_env).json()
    assert stored["run"]["status"] == "cancelled"


def test_runs_attach_picks_up_a_slurm_run_whose_app_was_killed(ssh_env, run_cli, slurm, data_dir, tmp_path):
    add_slurm_host(data_dir, slurm)
    events_path = tmp_path / "events.jsonl"
    proc = start_cli(ssh_env, tmp_path, "run", "--host", "hpc", "--nnodes", "2", *PACED, "--steps", "12",
                     "--warmup", "1", "--accept-new-host-key", "--events", str(events_path))
    wait_for("a step", lambda: any(e["type"] == "step" for e in read_events(events_path)), proc, tmp_path)
    proc.kill()  # the app is gone; the job goes on under Slurm
    proc.wait()
    run_id = read_events(events_path)[0]["run_id"]
    out = run_cli("runs", "attach", run_id, "--json", env=ssh_env, timeout=240)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["status"] == "ok" and result["train"]["nodes"] == 2 and result["train"]["steps_measured"] == 11
    stored = run_cli("runs", "show", run_id, "--json", env=ssh_env).json()
    assert stored["run"]["status"] == "ok"
    # The history holds the whole run once: every step of node 0, in one seq order, the job id kept.
    shown = run_cli("runs", "show", run_id, "--events", env=ssh_env).stdout
    events = [json.loads(line) for line in shown.splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert sorted(e["node_seq"] for e in events if e["type"] == "step") == \
        sorted({e["node_seq"] for e in events if e["type"] == "step"})
    assert sum(e["type"] == "step" for e in events) == 12 and events[0]["slurm"]["job_id"]


def test_a_dropped_connection_to_the_login_node_reconnects_and_the_run_ends_whole(ssh_env, slurm, data_dir,
                                                                                   tmp_path):
    add_slurm_host(data_dir, slurm)
    events_path = tmp_path / "events.jsonl"
    proc = start_cli(ssh_env, tmp_path, "run", "--host", "hpc", "--nnodes", "2", *PACED, "--steps", "12",
                     "--warmup", "1", "--accept-new-host-key", "--events", str(events_path), "--json")
    try:
        wait_for("two steps", lambda: sum(e["type"] == "step" for e in read_events(events_path)) >= 2,
                 proc, tmp_path)
        assert slurm.login.kill_sessions()  # the SSH connection to the login node drops mid-run
        code, results, stderr = finish(proc, tmp_path, timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert code == 0, stderr
    [result] = results
    assert result["status"] == "ok" and result["train"]["nodes"] == 2
    assert "reconnected to hpc" in stderr
    events = read_events(events_path)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert sum(e["type"] == "step" for e in events) == 12  # nothing lost, nothing twice


def test_a_job_whose_nodes_cannot_start_the_agent_fails_in_one_sentence_with_the_jobs_own_output(
        run_cli, ssh_env, slurm, data_dir, tmp_path):
    """Nodes that do not see the login node's home folder (here: the job folder's spec goes while it is queued)."""
    add_slurm_host(data_dir, slurm)
    blocker = slurm.command("sbatch", "--parsable", "--exclusive", "--nodes=2", "--output=/dev/null",
                            "--wrap", "sleep 300").stdout.strip()
    events_path = tmp_path / "events.jsonl"
    proc = start_cli(ssh_env, tmp_path, "run", "--host", "hpc", "--nnodes", "2", *TRAIN, "--steps", "4",
                     "--warmup", "1", "--accept-new-host-key", "--events", str(events_path), "--json")
    try:
        wait_for("the queue", lambda: any(e.get("slurm_state") == "queued (Resources)"
                                          for e in read_events(events_path)), proc, tmp_path)
        Path(read_events(events_path)[0]["slurm"]["job_dir"], "spec.json").unlink()
        slurm.command("scancel", blocker)
        code, results, stderr = finish(proc, tmp_path)
    finally:
        if proc.poll() is None:
            proc.kill()
        slurm.command("scancel", blocker)
    assert code != 0, stderr
    [result] = results
    assert result["status"] == "failed"
    message = result["error"]["message"]
    assert message.startswith(f"Slurm job {result['slurm']['job_id']} ended failed before the agent started on "
                              f"every node:"), message
    assert "No such file or directory" in message and "spec.json" in message  # the job's own output says why
    assert message in stderr
    stored = run_cli("runs", "show", result["run_id"], "--json", env=ssh_env).json()
    assert stored["run"]["status"] == "failed"
