"""The agent's housekeeping: cancel leaves no process behind, old run directories go after 14 days."""
from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time

import pytest

from remote_agent import runner
from remote_agent.eventlog import EventLog
from remote_agent.orphan import ENV_RUN_ID
from remote_agent.protocol import iter_events
from remote_agent.rundir import KEEP_RUNS_S, RunDir, remove_old_runs, write_pid_file

# A "supervisor" that ignores SIGTERM and starts a child in a session of its own that ignores it too:
# what a hung torchrun worker looks like to `cancel` (out of the supervisor's process group).
STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
    start_new_session=True)
print(child.pid, flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has finished
    except OSError:
        return True


@pytest.fixture
def agent_home(tmp_path, monkeypatch):
    monkeypatch.setenv("NEURONBENCH_AGENT_HOME", str(tmp_path / "agent-home"))
    return tmp_path / "agent-home"


def test_cancel_kills_processes_that_left_the_run_group_and_ignore_sigterm(agent_home):
    run = RunDir.for_id("r-cancel")
    run.create()
    env = dict(os.environ, **{ENV_RUN_ID: run.run_id})
    supervisor = subprocess.Popen([sys.executable, "-c", STUBBORN], env=env, stdout=subprocess.PIPE,
                                  start_new_session=True, text=True)
    try:
        child = int(supervisor.stdout.readline())
        write_pid_file(run, supervisor.pid)
        assert runner.cancel(run.run_id, grace_s=0.5) == runner.EXIT_OK
        supervisor.wait(timeout=10)
        deadline = time.monotonic() + 10
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _gone(child), "the worker in its own session survived cancel"
    finally:
        for pid in (supervisor.pid,):
            if supervisor.poll() is None:
                os.kill(pid, 9)


def test_cancel_of_an_unknown_or_finished_run_says_so(agent_home, capsys):
    assert runner.cancel("no-such-run", grace_s=0.1) == runner.EXIT_BAD_INPUT
    assert "no run no-such-run on this host" in capsys.readouterr().err
    run = RunDir.for_id("r-done")
    run.create()
    assert runner.cancel("r-done", grace_s=0.1) == runner.EXIT_BAD_INPUT
    assert "is not running on this host (it has ended)" in capsys.readouterr().err


def _old_run(run_id: str, age_s: float) -> RunDir:
    run = RunDir.for_id(run_id)
    run.create()
    log = EventLog.open(run.events)
    log.emit("end", status="ok")
    log.close()
    then = time.time() - age_s
    for path in (run.events, run.path):
        os.utime(path, (then, then))
    return run


def test_run_directories_untouched_for_14_days_are_removed_and_newer_ones_kept(agent_home):
    old = _old_run("r-old", KEEP_RUNS_S + 3600)
    recent = _old_run("r-recent", KEEP_RUNS_S - 3600)
    live = _old_run("r-live", KEEP_RUNS_S + 3600)
    write_pid_file(live, os.getpid())  # a supervisor that still runs keeps its directory, however old
    assert remove_old_runs() == ["r-old"]
    assert not os.path.exists(old.path) and os.path.isdir(recent.path) and os.path.isdir(live.path)


def test_attach_to_a_run_being_started_waits_for_its_supervisor(agent_home):
    """A reconnect can attach before the supervisor wrote its pid file: that is 'starting', not 'dead'."""
    run = RunDir.for_id("r-starting")
    run.create()
    log = EventLog.open(run.events)
    log.emit("hello", agent_version="0", protocol_version=1, pid=1, python="3", run_id=run.run_id)

    def finish_later() -> None:
        time.sleep(0.3)
        log.emit("end", status="ok")
        log.close()

    writer = threading.Thread(target=finish_later)
    writer.start()
    out = io.BytesIO()
    assert runner.attach(run.run_id, 1, out) == runner.EXIT_OK
    writer.join()
    assert [e["type"] for e in iter_events(out.getvalue().splitlines())] == ["hello", "end"]


def test_a_worker_line_cut_short_is_skipped_with_a_warning_and_the_run_goes_on(tmp_path):
    """A worker killed mid-write leaves half a line in its side file: the supervisor says so and relays the rest."""
    from remote_agent.rundir import RunDir
    from remote_agent.supervisor import Supervisor

    class Log:
        def __init__(self):
            self.events = []

        def emit(self, type_, t=None, **payload):
            self.events.append(dict(payload, type=type_))

    run = RunDir(str(tmp_path / "run"))
    os.makedirs(run.workers_dir, exist_ok=True)
    with open(os.path.join(run.workers_dir, "0-0.jsonl"), "wb") as side:
        side.write(b'{"v":1,"t":1.0,"type":"log","level":"info","message":"before"}\n')
        side.write(b'{"v":1,"t":1.0,"type":"st\n')
        side.write(b'{"v":1,"t":1.0,"type":"no-such-type"}\n')
        side.write(b'{"v":1,"t":2.0,"type":"step","i":1,"dt_s":0.1,"samples":8,"compiled":false}\n')
    supervisor = Supervisor(run)
    supervisor.events = Log()
    assert supervisor.relay()
    kinds = [(e["type"], e.get("message", "")) for e in supervisor.events.events]
    assert kinds[0] == ("log", "before")
    assert [k for k, _ in kinds[1:3]] == ["log", "log"] and "not an event" in kinds[1][1]
    assert kinds[3][0] == "step" and supervisor.steps[0]["i"] == 1
