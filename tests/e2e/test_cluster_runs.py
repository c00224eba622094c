"""One training run across several machines: real sshd "nodes" on 127.0.0.1, 127.0.0.2 (all loopback),
the real agent on each, torchrun's static rendezvous between them, gloo on the CPU, the tiny ViT."""
from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from tests.e2e.conftest import add_host, remote_profile, remote_runs_dir
from tests.e2e.sshd import make_server
from tests.helpers import paced_model_flags, tiny_model_flags

pytestmark = pytest.mark.slow

TRAIN = ["--workload", "train", "--backend", "cpu", *tiny_model_flags(), "--batch-size", "4", "--workers", "0"]
# The runs a test kills, cancels or cuts train the paced model (tests/data/models/paced.py) until then: no CPU
# burnt per process while the test waits, and as many steps in a second on a loaded machine as on an idle one.
PACED = ["--workload", "train", "--backend", "cpu", *paced_model_flags(), "--batch-size", "4", "--workers", "0"]


@pytest.fixture
def nodes(tmp_path: Path, ssh_client, data_dir):
    """Two machines: sshd on 127.0.0.1 and on 127.0.0.2, each with a HOME (and agent cache) of its own."""
    servers = []
    for name, address in (("node-a", "127.0.0.1"), ("node-b", "127.0.0.2")):
        server = make_server(tmp_path / name, ssh_client.key, address=address).start()
        servers.append(server)
        add_host(data_dir, remote_profile(server, name))
    yield servers
    for server in servers:
        server.stop()


def run_processes(run_ids: list[str]) -> list[int]:
    """Live processes of these agent runs (the agent marks every process it starts with its run id)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(entry.split(b"=", 1)[-1].decode(errors="replace") in run_ids for entry in environ
               if entry.startswith(b"NEURONBENCH_RUN_ID=")):
            found.append(int(name))
    return found


def test_two_nodes_of_two_processes_train_as_one_run_of_world_size_four(run_cli, ssh_env, nodes, tmp_path):
    events_path = tmp_path / "events.jsonl"
    out = run_cli("run", "--nodes", "node-a,node-b", *TRAIN, "--nproc", "2", "--steps", "8", "--warmup", "2",
                  "--accept-new-host-key", "--events", str(events_path), "--json", env=ssh_env, timeout=300)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["status"] == "ok" and result["host"] == "node-a,node-b"
    train = result["train"]
    assert train["nodes"] == 2 and train["world_size"] == 4 and train["global_batch"] == 16
    assert train["steps_measured"] == 6 and train["throughput_samples_per_s"] > 0
    assert [n["host"] for n in result["nodes"]] == ["node-a", "node-b"]
    assert [n["ranks"] for n in result["nodes"]] == [[0, 1], [2, 3]]
    assert all(n["status"] == "ok" and n["env"]["hostname"] for n in result["nodes"])
    assert result["spec"]["nnodes"] == 2

    # One stream: the run's hello, then every node's events tagged; steps from node 0 with the global batch.
    events = [json.loads(line) for line in events_path.read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[0]["type"] == "hello" and [n["run_id"] for n in events[0]["nodes"]] == \
        [f"{result['run_id']}-n0", f"{result['run_id']}-n1"]
    steps = [e for e in events if e["type"] == "step"]
    assert len(steps) == 8 and {e["node"] for e in steps} == {0} and {e["samples"] for e in steps} == {16}
    assert {e["node"] for e in events if e["type"] == "sample"} == {0, 1}  # each node its own telemetry
    assert {e["node"] for e in events if e["type"] == "probe"} == {0, 1}
    assert events[-1] == {**events[-1], "type": "end", "status": "ok"}

    # Each machine ran the ordinary detached agent, in a run folder of its own.
    for server, index in zip(nodes, (0, 1), strict=True):
        assert (remote_runs_dir(server) / f"{result['run_id']}-n{index}" / "events.jsonl").exists()
    stored = run_cli("runs", "show", result["run_id"], "--json", env=ssh_env).json()
    assert stored["run"]["status"] == "ok" and stored["result"]["train"]["nodes"] == 2
    shown = run_cli("runs", "show", result["run_id"], env=ssh_env).stdout
    assert "nodes       2: node-a (ranks 0–1), node-b (ranks 2–3)" in shown
    assert "node-b (node 1):" in shown  # node 1's own telemetry, under node 0's
    report = tmp_path / "report.html"
    out = run_cli("report", result["run_id"], "--format", "html", "--output", str(report), env=ssh_env)
    assert out.code == 0, out.stderr
    page = report.read_text()
    assert "Nodes of multi-node runs" in page and "node-b" in page


def test_a_node_whose_agent_is_killed_fails_the_run_by_name_and_nothing_is_left(run_cli, ssh_env, nodes, tmp_path):
    events_path = tmp_path / "events.jsonl"
    killed: list[int] = []

    def kill_node_b_supervisor() -> None:
        runs = remote_runs_dir(nodes[1])
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            steps = events_path.read_text().count('"type":"step"') if events_path.exists() else 0
            pid_files = list(runs.glob("*-n1/supervisor.pid")) if runs.exists() else []
            if steps >= 3 and pid_files:
                pid = int(pid_files[0].read_text().split()[0])
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_node_b_supervisor, daemon=True)
    killer.start()
    out = run_cli("run", "--nodes", "node-a,node-b", *PACED, "--nproc", "1", "--steps", "100000", "--warmup", "2",
                  "--accept-new-host-key", "--events", str(events_path), "--json", env=ssh_env, timeout=300)
    killer.join()
    assert killed, "the run never got going"
    assert out.code != 0
    [result] = out.json()
    assert result["status"] == "failed"
    assert result["error"]["message"].startswith("node-b (node 1)"), result["error"]["message"]
    assert "node-b (node 1)" in out.stderr
    # The other node was stopped: no process of either node's run is left on any machine.
    run_ids = [n["run_id"] for n in result["nodes"]]
    deadline = time.monotonic() + 30
    while run_processes(run_ids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert run_processes(run_ids) == []
    # Everything received is kept: the steps node 0 reported before the failure are in the store.
    stored = run_cli("runs", "show", result["run_id"], "--events", env=ssh_env)
    assert stored.stdout.count('"type":"step"') >= 3


def _start(ssh_env: dict, events_path: Path, *extra: str):
    import subprocess
    import sys

    from tests.conftest import REPO

    return subprocess.Popen([sys.executable, "-m", "app", "run", "--nodes", "node-a,node-b", *PACED, "--nproc", "1",
                             "--steps", "100000", "--warmup", "2", "--accept-new-host-key", "--events",
                             str(events_path), "--json", *extra], env=ssh_env, cwd=REPO, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_steps(events_path: Path, count: int, proc=None, timeout: float = 240) -> list[dict]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if events_path.exists():
            events = [json.loads(line) for line in events_path.read_text().splitlines() if line.strip()]
            if sum(e["type"] == "step" for e in events) >= count:
                return events
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run ended early: {proc.stderr.read()}")
        time.sleep(0.1)
    raise AssertionError("no steps in time")


def test_cancel_stops_every_node_and_leaves_no_process_anywhere(run_cli, ssh_env, nodes, tmp_path):
    events_path = tmp_path / "events.jsonl"
    proc = _start(ssh_env, events_path)
    events = _wait_steps(events_path, 2, proc)
    run_id = events[0]["run_id"]
    cancel = run_cli("runs", "cancel", run_id, env=ssh_env)
    assert cancel.code == 0, cancel.stderr
    assert "node-a (node 0)" in cancel.stderr and "node-b (node 1)" in cancel.stderr
    stdout, _ = proc.communicate(timeout=120)
    [result] = json.loads(stdout)
    assert result["status"] == "cancelled" and [n["status"] for n in result["nodes"]] == ["cancelled"] * 2
    assert run_processes([f"{run_id}-n0", f"{run_id}-n1"]) == []
    assert run_cli("runs", "show", run_id, "--json", env=ssh_env).json()["run"]["status"] == "cancelled"


def test_a_dropped_connection_and_a_killed_app_lose_nothing_on_any_node(run_cli, ssh_env, nodes, tmp_path):
    events_path = tmp_path / "events.jsonl"
    proc = _start(ssh_env, events_path)
    _wait_steps(events_path, 3, proc)
    nodes[1].kill_sessions()  # node-b's connection drops: its session reconnects and attaches on its own
    events = _wait_steps(events_path, 8, proc)
    run_id = events[0]["run_id"]
    proc.send_signal(signal.SIGKILL)  # now the app itself dies mid-run; the nodes go on
    proc.wait(timeout=30)
    held = run_cli("runs", "show", run_id, "--json", env=ssh_env).json()["run"]
    assert held["status"] == "unfinished"
    # Stop the run soon after the re-attach, so the test does not train for ever.
    stopper = threading.Timer(8.0, lambda: run_cli("runs", "cancel", run_id, env=ssh_env))
    stopper.start()
    attached = run_cli("runs", "attach", run_id, env=ssh_env, timeout=240)
    stopper.join()
    assert "attaching to the 2 nodes" in attached.stderr
    stored = [json.loads(line) for line in run_cli("runs", "show", run_id, "--events", env=ssh_env).stdout.splitlines()]
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    # Every node's own stream is in the run's stream once, in order, without a gap.
    for node in (0, 1):
        node_seqs = [e["node_seq"] for e in stored if e.get("node") == node]
        assert node_seqs == sorted(set(node_seqs)), f"node {node} has repeats or disorder"
        assert node_seqs == list(range(node_seqs[0], node_seqs[-1] + 1)), f"node {node} lost events"
    steps = [e["i"] for e in stored if e["type"] == "step"]
    assert steps == list(range(1, len(steps) + 1)) and len(steps) > 8
    assert stored[-1]["type"] == "end" and stored[-1]["status"] == "cancelled"


@pytest.fixture
def walled_nodes(tmp_path: Path, ssh_client, data_dir):
    """node-a on this computer and node-b in a network namespace of its own (another "machine")."""
    from tests.e2e.netns import Namespace, netns_unavailable

    reason = netns_unavailable()
    if reason:
        pytest.skip(reason)
    namespace = Namespace.create()
    servers = []
    try:
        servers.append(make_server(tmp_path / "node-a", ssh_client.key).start())
        servers.append(make_server(tmp_path / "node-b", ssh_client.key, address=namespace.address,
                                   netns=namespace.name).start())
        for name, server in zip(("node-a", "node-b"), servers, strict=True):
            add_host(data_dir, remote_profile(server, name))
        yield servers
    finally:
        for server in servers:
            server.stop()
        namespace.delete()


def test_a_node_that_cannot_reach_the_master_is_named_and_the_run_fails_in_one_sentence(run_cli, ssh_env,
                                                                                        walled_nodes):
    # The master address node-a listens on (its loopback) is not reachable from node-b's machine.
    out = run_cli("run", "--nodes", "node-a,node-b", *TRAIN, "--nproc", "1", "--steps", "5", "--warmup", "1",
                  "--master-addr", "127.0.0.1", "--rendezvous-timeout", "5", "--accept-new-host-key", "--json",
                  env=ssh_env, timeout=300)
    assert out.code != 0
    [result] = out.json()
    assert result["status"] == "failed"
    assert result["error"]["message"].startswith(
        "node-b (node 1): this node could not reach the rendezvous at 127.0.0.1:"), result["error"]["message"]
    assert "security group or firewall" in out.stderr
    assert [n["ranks"] for n in result["nodes"]] == [[], []]  # nobody trained
    assert run_processes([n["run_id"] for n in result["nodes"]]) == []


def test_a_neuron_run_across_trn1_2xlarge_nodes_is_refused_before_any_connection(run_cli, data_dir):
    from app.core.hosts import HostProfile

    for name in ("small-a", "small-b"):  # nothing listens there: the refusal must come first
        add_host(data_dir, HostProfile(name=name, hostname="127.0.0.1", port=9, instance_type="trn1.2xlarge"))
    out = run_cli("run", "--nodes", "small-a,small-b", "--preset", "seed-train-trn1")
    assert out.code == 2
    assert out.stderr.strip() == (
        "neuronbench: error: a 2-node Neuron run needs EFA between the nodes, which trn1.2xlarge does not have: use "
        "trn1.32xlarge, trn1n.32xlarge, trn2.48xlarge nodes, or run on one node")
