"""Ctrl-C on ``neuronbench run`` (issue 16): the first cancels the run on every host it spans and returns once no
process of it is left, stored cancelled; a second stops waiting, leaves the run going and says how to follow or stop
it.  The CLI runs in a process group of its own, signalled as a whole, as a terminal's Ctrl-C does."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remote_agent.orphan import run_processes
from remote_agent.protocol import iter_events
from tests.conftest import REPO
from tests.e2e.conftest import add_host, remote_profile, remote_runs_dir
from tests.e2e.sshd import make_server
from tests.e2e.test_ssh_runs import running
from tests.helpers import paced_model_flags, process_tree

pytestmark = pytest.mark.slow

# The paced model (tests/data/models/paced.py): the run trains until Ctrl-C without taking a CPU meanwhile.
TRAIN = ["--workload", "train", *paced_model_flags(), "--backend", "cpu", "--workers", "0", "--batch-size", "4",
         "--steps", "100000", "--warmup", "1", "--accept-new-host-key"]


class Cli:
    """``neuronbench ARGS`` started as from a terminal: its own process group, output kept in files."""

    def __init__(self, env: dict[str, str], folder: Path, *args: str) -> None:
        self.events_path = folder / "events.jsonl"
        self.stderr_path = folder / "cli.stderr"
        with open(folder / "cli.stdout", "w") as out, open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "app", *args, "--events", str(self.events_path)],
                                         env=env, cwd=REPO, stdout=out, stderr=err, start_new_session=True)

    def ctrl_c(self) -> None:
        os.killpg(self.proc.pid, signal.SIGINT)  # the whole foreground group, as the terminal does

    def events(self) -> list[dict]:
        text = self.events_path.read_text() if self.events_path.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def wait_for(self, what: str, condition, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None:
                pytest.fail(f"neuronbench ended (exit {self.proc.returncode}) before {what}:\n{self.stderr()}")
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {timeout:g} s:\n{self.stderr()}")
            time.sleep(0.05)

    def steps(self, count: int) -> None:
        self.wait_for(f"{count} steps", lambda: sum(e["type"] == "step" for e in self.events()) >= count)

    def exit_code(self, timeout: float = 120) -> int:
        return self.proc.wait(timeout=timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def kill_leftovers(self) -> None:
        """After the test: whatever a failure left of its runs (100000 steps) must not go on training."""
        hello = next(iter(self.events()), None)
        if hello is None:
            return
        for run_id in [hello["run_id"], *(node["run_id"] for node in hello.get("nodes") or [])]:
            for pid in run_processes(run_id):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


@pytest.fixture
def cli_runs():
    """Start ``neuronbench`` as from a terminal; every run it started is gone after the test, pass or fail."""
    started: list[Cli] = []

    def start(env: dict[str, str], folder: Path, *args: str) -> Cli:
        started.append(Cli(env, folder, *args))
        return started[-1]

    yield start
    for cli in started:
        cli.stop()
        cli.kill_leftovers()


def the_runs_processes(run_id: str, supervisor: int) -> set[int]:
    """The run's processes now: marked with its id, and everything below its supervisor."""
    return running(process_tree(supervisor)) | set(run_processes(run_id))


def stored_status(run_cli, env, run_id: str) -> list[tuple[str, str]]:
    return [(r["run_id"], r["status"]) for r in run_cli("runs", "list", "--json", env=env).json()["runs"]]


def test_ctrl_c_cancels_an_ssh_run_of_two_processes_and_returns_once_none_is_left(sshd, data_dir, ssh_env, tmp_path,
                                                                                 run_cli, cli_runs):
    add_host(data_dir, remote_profile(sshd))
    cli = cli_runs(ssh_env, tmp_path, "run", "--host", "box", *TRAIN, "--nproc", "2", "--repeats", "2")
    try:
        cli.steps(2)
        hello = cli.events()[0]
        run_id = hello["run_id"]
        processes = the_runs_processes(run_id, hello["pid"])
        assert len(processes) >= 4  # the supervisor, torchrun and its two workers
        cli.ctrl_c()
        code = cli.exit_code()
    finally:
        cli.stop()
    left = running(processes) | set(run_processes(run_id))  # the moment it returned: it waited for the cancel
    stderr = cli.stderr()
    assert left == set(), stderr
    assert code == 130, stderr
    assert "cancelling: stopping the runs and every process they started" in stderr
    assert "run cancelled on box: cancelled by Ctrl-C: no process of it is left on box" in stderr
    assert "runs attach" not in stderr  # nothing was left running
    # Stored as cancelled with every event; the second repeat never started, here or on the host.
    assert stored_status(run_cli, ssh_env, run_id) == [(run_id, "cancelled")]
    assert [p.name for p in remote_runs_dir(sshd).iterdir()] == [run_id]
    on_host = list(iter_events((remote_runs_dir(sshd) / run_id / "events.jsonl").read_bytes().splitlines()))
    assert on_host[-1]["type"] == "end" and on_host[-1]["status"] == "cancelled"
    shown = [json.loads(line) for line in run_cli("runs", "show", run_id, "--events", env=ssh_env).stdout.splitlines()]
    assert [e["seq"] for e in shown] == [e["seq"] for e in on_host]


def test_a_second_ctrl_c_stops_waiting_leaves_the_run_going_and_says_how_to_follow_or_stop_it(
        sshd, data_dir, ssh_env, tmp_path, run_cli, cli_runs):
    add_host(data_dir, remote_profile(sshd))
    cli = cli_runs(ssh_env, tmp_path, "run", "--host", "box", *TRAIN)
    try:
        cli.steps(2)
        hello = cli.events()[0]
        run_id = hello["run_id"]
        sshd.stop()  # the host drops off the network: the run goes on there, and no cancel can reach it
        cli.ctrl_c()
        cli.wait_for("the cancel to fail", lambda: f"could not cancel run {run_id} yet" in cli.stderr())
        cli.ctrl_c()
        code = cli.exit_code()
    finally:
        cli.stop()
    stderr = cli.stderr()
    assert code == 130, stderr
    assert f"neuronbench: run {run_id} on box was left without waiting for its end (it goes on)" in stderr
    attach_line = f"neuronbench runs attach {run_id}"
    cancel_line = f"neuronbench runs cancel {run_id}"
    assert attach_line in stderr and cancel_line in stderr
    assert the_runs_processes(run_id, hello["pid"]), "the run should go on on its host"
    assert stored_status(run_cli, ssh_env, run_id) == [(run_id, "unfinished")]

    sshd.start()  # back: the printed lines do what they say
    cancelled = run_cli(*cancel_line.split()[1:], env=ssh_env)
    assert cancelled.code == 0 and "no process of it is left" in cancelled.stderr, cancelled.stderr
    assert the_runs_processes(run_id, hello["pid"]) == set()
    attached = run_cli(*attach_line.split()[1:], "--json", env=ssh_env)
    assert attached.json()[0]["status"] == "cancelled", attached.stderr
    assert stored_status(run_cli, ssh_env, run_id) == [(run_id, "cancelled")]


def test_ctrl_c_cancels_a_local_run_whose_agent_shares_the_terminal(data_dir, cli_env, tmp_path, run_cli,
                                                                      cli_runs):
    """The terminal signals the agent processes the CLI started too: they must not drop the run's stream."""
    cli = cli_runs(cli_env, tmp_path, "run", "--host", "local", *TRAIN, "--nproc", "2")
    try:
        cli.steps(2)
        hello = cli.events()[0]
        run_id = hello["run_id"]
        processes = the_runs_processes(run_id, hello["pid"])
        cli.ctrl_c()
        code = cli.exit_code()
    finally:
        cli.stop()
    stderr = cli.stderr()
    assert running(processes) | set(run_processes(run_id)) == set(), stderr
    assert code == 130, stderr
    assert "run cancelled on local: cancelled by Ctrl-C: no process of it is left on local" in stderr
    assert stored_status(run_cli, cli_env, run_id) == [(run_id, "cancelled")]
    assert cli.events()[-1]["type"] == "end" and cli.events()[-1]["status"] == "cancelled"


def test_ctrl_c_cancels_a_run_across_two_nodes_on_both(tmp_path, ssh_client, data_dir, ssh_env, run_cli,
                                                       cli_runs):
    servers = []
    for name, address in (("node-a", "127.0.0.1"), ("node-b", "127.0.0.2")):
        servers.append(make_server(tmp_path / name, ssh_client.key, address=address).start())
        add_host(data_dir, remote_profile(servers[-1], name))
    cli = cli_runs(ssh_env, tmp_path, "run", "--nodes", "node-a,node-b", *TRAIN)
    try:
        cli.steps(2)
        run_id = cli.events()[0]["run_id"]
        node_runs = [f"{run_id}-n0", f"{run_id}-n1"]
        assert all(run_processes(node_run) for node_run in node_runs)
        cli.ctrl_c()
        code = cli.exit_code()
    finally:
        cli.stop()
        for server in servers:
            server.stop()
    stderr = cli.stderr()
    assert [pid for node_run in node_runs for pid in run_processes(node_run)] == [], stderr
    assert code == 130, stderr
    assert "cancelling: stopping the run on every node" in stderr
    assert "run cancelled on node-a,node-b: cancelled by Ctrl-C" in stderr
    assert stored_status(run_cli, ssh_env, run_id) == [(run_id, "cancelled")]
    assert cli.events()[-1]["type"] == "end" and cli.events()[-1]["status"] == "cancelled"
