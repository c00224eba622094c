"""Real runs over a real sshd: training, dropped connections, cancel, many hosts, attach from a new process."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.paths import AppPaths
from app.services.multi_run import RunListener, RunTicket, run_on_hosts
from app.services.recorder import RunRecorder
from app.services.session import RunSession
from app.services.ssh_prompts import NoPrompts
from app.services.ssh_transport import SshTransport
from app.services.store import RunStore
from remote_agent.protocol import RunSpec, iter_events
from tests.conftest import REPO
from tests.e2e.conftest import add_host, remote_profile, remote_runs_dir
from tests.e2e.sshd import free_port, make_server
from tests.helpers import TINY_ARGS, TINY_MODEL, paced_model_flags, paced_spec_fields, process_tree, tiny_model_flags

pytestmark = pytest.mark.slow

TRAIN = ["--workload", "train", *tiny_model_flags(), "--backend", "cpu", "--workers", "0", "--batch-size", "4"]
# The same training of the paced model (tests/data/models/paced.py): for runs that are cut, cancelled or many.
PACED = ["--workload", "train", *paced_model_flags(), "--backend", "cpu", "--workers", "0", "--batch-size", "4"]


def tiny_spec(**fields) -> RunSpec:
    model_args = {k: int(v) for k, v in (a.split("=") for a in TINY_ARGS)}
    base = dict(workload="train", model=TINY_MODEL, model_args=model_args, backend="cpu", batch_sizes=(4,),
                workers=0, warmup=1)
    base.update(fields)
    return RunSpec(**base)


def paced_spec(**fields) -> RunSpec:
    """tiny_spec with the paced model: about 0.05 s a step at almost no CPU, however busy the machine is."""
    return tiny_spec(**{**paced_spec_fields(), **fields})


def running(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                alive.add(pid)
        except OSError:
            pass
    return alive


def test_probe_and_a_tiny_training_run_over_ssh(sshd, data_dir, run_cli, ssh_env):
    add_host(data_dir, remote_profile(sshd))
    probe = run_cli("probe", "--host", "box", "--json", "--accept-new-host-key", env=ssh_env)
    assert probe.code == 0, probe.stderr
    assert probe.json()["env"]["python"]["executable"] == sys.executable

    out = run_cli("run", "--host", "box", *TRAIN, "--steps", "5", "--warmup", "1", "--json", env=ssh_env)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["host"] == "box" and result["status"] == "ok" and result["train"]["steps_measured"] == 4
    assert "[box] agent" in out.stderr and "[box] run ok" in out.stderr
    events = remote_runs_dir(sshd) / result["run_id"] / "events.jsonl"  # the run lived in the remote HOME
    assert [e["type"] for e in iter_events(events.read_bytes().splitlines())][-1] == "end"


def test_a_dropped_connection_loses_no_event_and_repeats_none(sshd, data_dir):
    ssh = SshTransport(remote_profile(sshd), AppPaths.resolve(data_dir), NoPrompts(accept_new_host_keys=True))
    received: list[dict] = []
    notices: list[str] = []
    dropped: list[int] = []
    reconnected_at: list[float] = []

    def on_notice(text: str) -> None:
        notices.append(text)
        if text.startswith("reconnected"):
            reconnected_at.append(time.time())

    def on_event(event: dict) -> None:
        received.append(event)
        if event["type"] != "step":
            return
        # Kill the sshd process serving the connection twice mid-run: the run goes on over there.  The
        # second time only on a step the host made after we reconnected (not one from the replayed
        # backlog, which may already sit in our buffers), so that the drop really cuts a live stream.
        live_again = len(reconnected_at) == 1 and event["t"] > reconnected_at[0] + 0.2
        if (not dropped and event["i"] == 3) or (len(dropped) == 1 and live_again):
            dropped.append(event["i"])
            assert sshd.kill_sessions()

    # 400 paced steps (20 s or more) outlast two drops and reconnects on an idle machine as on a loaded one.
    session = RunSession(ssh, paced_spec(steps=400), on_event=on_event, on_notice=on_notice)
    result = session.run()
    ssh.close()
    assert result["status"] == "ok" and result["train"]["steps_total"] == 400 and len(dropped) == 2
    assert session.reconnects == 2 and sum("lost after event" in n for n in notices) == 2
    seqs = [e["seq"] for e in received]
    assert seqs == list(range(1, len(seqs) + 1))  # contiguous: nothing lost, nothing twice
    on_host = [e["seq"] for e in iter_events((remote_runs_dir(sshd) / session.run_id / "events.jsonl")
                                             .read_bytes().splitlines())]
    assert seqs == on_host
    assert [e["i"] for e in received if e["type"] == "step"] == list(range(1, 401))


def test_cancel_stops_torchrun_and_its_workers_leaving_no_process(sshd, data_dir, run_cli, ssh_env):
    add_host(data_dir, remote_profile(sshd))
    ssh = SshTransport(remote_profile(sshd), AppPaths.resolve(data_dir), NoPrompts(accept_new_host_keys=True))
    tree: set[int] = set()
    cancel_out: list = []
    state: dict = {}

    def on_event(event: dict) -> None:
        if event["type"] == "hello":
            state["supervisor"] = event["pid"]
        if event["type"] == "step" and not tree:
            tree.update(process_tree(state["supervisor"]))  # supervisor, torchrun, 2 workers (own sessions)
            worker = threading.Thread(target=lambda: cancel_out.append(
                run_cli("runs", "cancel", session.run_id, "--host", "box", env=ssh_env)))
            worker.start()
            state["thread"] = worker

    session = RunSession(ssh, paced_spec(steps=100000, nproc=2), on_event=on_event)
    result = session.run()
    state["thread"].join()
    ssh.close()
    assert result["status"] == "cancelled"
    [out] = cancel_out
    assert out.code == 0 and "no process of it is left" in out.stderr, out.stderr
    assert len(tree) >= 4
    assert running(tree) == set()


def test_four_hosts_at_once_and_a_dead_one_does_not_stop_them(tmp_path, ssh_client, data_dir, run_cli, ssh_env):
    servers = [make_server(tmp_path / f"sshd-{n}", ssh_client.key).start() for n in "abcd"]
    try:
        for name, server in zip("abcd", servers, strict=True):
            add_host(data_dir, remote_profile(server, name))
        add_host(data_dir, remote_profile(servers[0], "dead", port=free_port()))
        events = tmp_path / "events.jsonl"
        hosts = [arg for name in [*"abcd", "dead"] for arg in ("--host", name)]
        out = run_cli("run", *hosts, *PACED, "--steps", "3", "--warmup", "1", "--json", "--accept-new-host-key",
                      "--events", str(events), env=ssh_env)
    finally:
        for server in servers:
            server.stop()
    assert out.code == 1
    results = out.json()
    assert [r["host"] for r in results] == [*"abcd", "dead"]
    assert [r["status"] for r in results] == ["ok"] * 4 + ["failed"]
    assert "refused the connection" in results[4]["error"]["message"]
    assert "neuronbench: error: run failed on dead:" in out.stderr
    for name in "abcd":
        assert f"[{name}] run ok" in out.stderr
    kinds = [json.loads(line)["type"] for line in events.read_text().splitlines()]
    assert kinds.count("hello") == 4
    assert max(i for i, k in enumerate(kinds) if k == "hello") < kinds.index("end")  # they ran side by side


def test_runs_attach_from_a_new_process_after_the_first_one_died(sshd, data_dir, run_cli, ssh_env, cli_env, tmp_path):
    add_host(data_dir, remote_profile(sshd))
    events = tmp_path / "events.jsonl"
    first = subprocess.Popen([sys.executable, "-m", "app", "run", "--host", "box", *PACED, "--steps", "12",
                              "--accept-new-host-key", "--events", str(events)], env=ssh_env, cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while '"type":"step"' not in (events.read_text() if events.exists() else ""):
        assert first.poll() is None and time.monotonic() < deadline, "the first run never reached a step"
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)  # the app dies (laptop closed): the run goes on on the host
    first.wait()
    run_id = json.loads(events.read_text().splitlines()[0])["run_id"]

    listed = run_cli("runs", "list", "--json", env=ssh_env).json()["runs"]
    assert [r["status"] for r in listed if r["run_id"] == run_id] == ["unfinished"]

    out = run_cli("runs", "attach", run_id, "--json", env=ssh_env)  # the run store knows the host
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["run_id"] == run_id and result["status"] == "ok" and result["train"]["steps_total"] == 12
    assert f"[box] attaching to run {run_id} from event" in out.stderr and "[box] run ok" in out.stderr
    # The history now holds the whole run: every event once, from the hello to the end.
    stored = [json.loads(line) for line in run_cli("runs", "show", run_id, "--events", env=ssh_env).stdout.splitlines()]
    assert [e["seq"] for e in stored] == list(range(1, len(stored) + 1))
    assert stored[0]["type"] == "hello" and stored[-1]["type"] == "end"
    assert run_cli("runs", "list", "--json", env=ssh_env).json()["runs"][0]["status"] == "ok"


def test_a_host_lost_for_good_keeps_the_run_unfinished_until_attach_completes_it(sshd, data_dir, run_cli, ssh_env):
    """The SSH server goes away mid-run for longer than the reconnect budget: the run is not "failed" (it goes
    on over there) but unfinished, and `runs attach` records the rest once the host is back."""
    paths = AppPaths.resolve(data_dir)
    add_host(data_dir, remote_profile(sshd))
    ssh = SshTransport(remote_profile(sshd), paths, NoPrompts(accept_new_host_keys=True))
    store = RunStore(paths.runs_db)
    recorders: list[RunRecorder] = []

    def listener(ticket: RunTicket) -> RunListener:
        recorder = RunRecorder.start(store, None, ticket.host, spec, ticket.run_id)
        recorders.append(recorder)

        def on_event(event: dict) -> None:
            recorder(event)
            if event["type"] == "step" and event["i"] == 3:
                sshd.stop()  # the listener and every session: nothing answers any more

        return RunListener(on_event=on_event, on_result=recorder.finish)

    spec = paced_spec(steps=60)
    (result,) = run_on_hosts([ssh], spec, listener_for=listener, session_options={"reconnect_for_s": 1.0})
    ssh.close()
    run_id = recorders[0].run_id
    assert result["status"] == "failed" and result["error"]["kind"] == "ConnectError"
    assert f"runs attach {run_id}" in result["error"]["message"]
    assert store.get_run(run_id).status == "unfinished"  # not failed: its host may still be running it
    held = store.last_seq(run_id)
    store.close()

    sshd.start()  # the host is back (same port, same key)
    out = run_cli("runs", "attach", run_id, "--json", env=ssh_env)
    assert out.code == 0, out.stderr
    assert out.json()[0]["status"] == "ok" and out.json()[0]["train"]["steps_total"] == 60
    assert f"attaching to run {run_id} from event {held + 1} ({held} already in the run store)" in out.stderr
    with RunStore(paths.runs_db) as reopened:
        seqs = [e["seq"] for e in reopened.events(run_id)]
        assert seqs == list(range(1, len(seqs) + 1)) and reopened.get_run(run_id).status == "ok"


def test_hostile_model_arguments_are_data_on_the_host(sshd, data_dir, tmp_path):
    marker = tmp_path / "pwned"
    spec = tiny_spec(steps=3, model_args={"img_size": 32, "patch_size": 8, "depth": 2, "embed_dim": 64,
                                          "num_heads": 2, "global_pool": f"$(touch {marker})';touch {marker}"},
                     neuron_cc_flags=f"`touch {marker}`; touch {marker}")
    ssh = SshTransport(remote_profile(sshd), AppPaths.resolve(data_dir), NoPrompts(accept_new_host_keys=True))
    result = RunSession(ssh, spec).run()
    ssh.close()
    assert result["status"] == "failed"  # timm refuses that pooling name: as a value, not as a command
    assert "global_pool" in json.dumps(result["spec"]) and not marker.exists()
