"""The agent's subcommands that talk to the app: ``probe``, ``run``, ``attach``, ``cancel``, ``monitor``."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any, Optional

from remote_agent.diskspace import RESERVE_BYTES, Reserve, free_space, full_sentence, is_disk_full, preflight_problem
from remote_agent.eventlog import EventLog, emit_hello
from remote_agent.follow import follow
from remote_agent.launch import agent_command, child_env
from remote_agent.orphan import ENV_RUN_ID, run_processes, signal_all
from remote_agent.protocol import SpecError, check_run_id, check_telemetry_period, new_run_id, parse_run_request
from remote_agent.rundir import (
    RunDir,
    remove_old_runs,
    runs_root,
    supervisor_alive,
    supervisor_pid,
    tail_text,
    write_pid_file,
)

EXIT_OK, EXIT_BAD_INPUT, EXIT_AGENT_DIED = 0, 2, 3
STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
# A run directory without a pid file is a run being started (``run`` writes it right after the spawn).
STARTING_GRACE_S = 30.0


def _hello(log: EventLog, run_id: Optional[str]) -> None:
    emit_hello(log, run_id, os.getpid())


def probe(out: IO[bytes], quick: bool = False) -> int:
    """hello, probe, end: the host's environment as data."""
    from remote_agent.probe import collect_env

    log = EventLog(out)
    _hello(log, None)
    log.emit("probe", env=collect_env(quick=quick))
    log.emit("end", status="ok")
    return EXIT_OK


def _refuse(out: IO[bytes], run_id: Optional[str], message: str, kind: str = "bad_spec") -> int:
    log = EventLog(out)
    _hello(log, run_id)
    log.emit("error", kind=kind, message=message, detail="")
    log.emit("end", status="failed")
    return EXIT_BAD_INPUT


def _died(run: RunDir, pid: Optional[int], code: Optional[int]) -> int:
    """Explain on stderr why the stream stopped; the last line is the sentence for the user."""
    if code is not None and code < 0:
        try:
            how = "was killed by %s" % signal.Signals(-code).name
        except ValueError:
            how = "was killed by signal %d" % -code
    elif code is not None:
        how = "exited with code %d" % code
    else:
        how = "is no longer running"
    sys.stderr.write("--- agent.log ---\n%s\n--- stderr.log (tail) ---\n%s\n"
                     % (tail_text(run.agent_log).strip(), tail_text(run.stderr_log).strip()))
    if _disk_full(run.path):  # it could not even write its last events: that is the reason to give
        sys.stderr.write("%s (its supervisor, pid %s, %s)\n" % (full_sentence(run.path), pid, how))
        return EXIT_AGENT_DIED
    sys.stderr.write("its supervisor (pid %s) %s before the run ended; the events so far are in %s\n"
                     % (pid, how, run.events))
    return EXIT_AGENT_DIED


def _disk_full(path: str) -> bool:
    try:
        free, inodes = free_space(path)
    except OSError:
        return False
    return free < RESERVE_BYTES or inodes == 0


def _create_run_dir(run_dir: RunDir, spec: Any, node: Any) -> None:
    """The run folder with its spec, placement and space reserve; nothing of it is left if the disk is full."""
    run_dir.create()
    try:
        Reserve(run_dir.path).make()  # first: the room the run's last events will need
        with open(run_dir.spec, "w") as handle:
            json.dump(spec.to_dict(), handle, indent=1)
        if node is not None:
            with open(run_dir.node, "w") as handle:
                json.dump(node.to_dict(), handle, indent=1)
    except OSError:
        import shutil

        shutil.rmtree(run_dir.path, ignore_errors=True)
        raise


def run(spec_text: str, run_id: Optional[str], out: IO[bytes]) -> int:
    """Start a detached run and stream its events until it ends.

    The supervisor runs in a new session: if this process dies with the
    connection, the run goes on and ``attach`` picks the stream up again.
    """
    run_id = run_id or new_run_id()
    try:
        check_run_id(run_id)
        spec, node = parse_run_request(json.loads(spec_text))
    except (SpecError, ValueError) as exc:
        return _refuse(out, run_id if run_id else None, "bad run spec: %s" % exc)
    remove_old_runs()
    problem = preflight_problem(runs_root())
    if problem is not None:
        return _refuse(out, run_id, problem, kind="runtime")
    run_dir = RunDir.for_id(run_id)
    try:
        _create_run_dir(run_dir, spec, node)
    except FileExistsError:
        return _refuse(out, run_id, "run %s already exists on this host; attach to it instead" % run_id)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        return _refuse(out, run_id, full_sentence(runs_root()), kind="runtime")
    env = child_env()
    env[ENV_RUN_ID] = run_id
    # The supervisor starts with SIGTERM/SIGINT blocked (the mask is inherited) and unblocks them once
    # its handler is in place: a cancel that comes right after the hello still ends the run cleanly.
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        with open(run_dir.agent_log, "wb") as agent_log:
            proc = subprocess.Popen(agent_command() + ["_supervise", run_dir.path], start_new_session=True,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=agent_log,
                                    env=env, cwd=run_dir.path)
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
    # The hello (seq 1) is written here, not by the supervisor: the app hears that its run started
    # without waiting for a second Python to start (the supervisor waits for this line, then goes on
    # from seq 2).  The pid file too: an ``attach`` after a dropped connection sees a live run at once.
    try:
        log = EventLog.open(run_dir.events)
        emit_hello(log, run_id, proc.pid, spec.to_event_dict())
        log.close()
        write_pid_file(run_dir, proc.pid)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        os.killpg(proc.pid, signal.SIGKILL)  # it has started nothing yet: it waits for this hello
        proc.wait()
        import shutil

        shutil.rmtree(run_dir.path, ignore_errors=True)
        return _refuse(out, run_id, full_sentence(runs_root()), kind="runtime")
    status = follow(run_dir.events, out, 1, alive=lambda: proc.poll() is None)
    if status is None:
        return _died(run_dir, proc.pid, proc.poll())
    return EXIT_OK


def attach(run_id: str, from_seq: int, out: IO[bytes]) -> int:
    """Replay a run's events from ``from_seq`` (after its hello) and follow it to the end."""
    run_dir = RunDir.for_id(run_id)
    if not run_dir.exists():
        sys.stderr.write("no run %s on this host (looked in %s)\n" % (run_id, run_dir.path))
        return EXIT_BAD_INPUT

    def alive() -> bool:
        if supervisor_alive(run_dir):
            return True
        try:
            starting = not os.path.exists(run_dir.pid_file) and \
                time.time() - os.path.getmtime(run_dir.path) < STARTING_GRACE_S
        except OSError:
            starting = False
        return starting

    status = follow(run_dir.events, out, max(1, from_seq), alive=alive)
    if status is None:
        return _died(run_dir, supervisor_pid(run_dir), None)
    return EXIT_OK


def _wait_gone(run_dir: RunDir, run_id: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        if not supervisor_alive(run_dir) and not run_processes(run_id):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def cancel(run_id: str, grace_s: float = 15.0) -> int:
    """Stop a run and every process it started; return once none is left.

    SIGTERM to the supervisor's process group first: the supervisor stops its
    workload (torchrun passes the signal to its workers) and still writes its
    ``result`` and ``end: cancelled``.  Whatever is left after ``grace_s`` gets
    SIGKILL, found by the run's environment marker, since torchrun's workers
    and DataLoader processes may sit in sessions of their own.
    """
    run_dir = RunDir.for_id(run_id)
    if not run_dir.exists():
        sys.stderr.write("no run %s on this host (looked in %s)\n" % (run_id, run_dir.path))
        return EXIT_BAD_INPUT
    pid = supervisor_pid(run_dir)
    running = pid is not None and supervisor_alive(run_dir)
    if not running and not run_processes(run_id):
        sys.stderr.write("run %s is not running on this host (it has ended)\n" % run_id)
        return EXIT_BAD_INPUT
    if running:
        try:
            os.killpg(pid, signal.SIGTERM)  # the supervisor leads its session: its pgid is its pid
        except ProcessLookupError:
            pass
    if not _wait_gone(run_dir, run_id, grace_s):
        if running:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        signal_all(run_processes(run_id), signal.SIGKILL)
        if not _wait_gone(run_dir, run_id, 5.0):
            sys.stderr.write("run %s: processes %s survived SIGKILL\n" % (run_id, run_processes(run_id)))
            return EXIT_AGENT_DIED
    sys.stderr.write("run %s cancelled; no process of it is left\n" % run_id)
    return EXIT_OK


def monitor(out: IO[bytes], period: float, duration: Optional[float]) -> int:
    """hello, a ``sample`` every ``period`` seconds, end: neuron-top for the app.

    Stops after ``duration`` seconds, on SIGTERM/SIGINT/SIGHUP (the app or the SSH
    session went away), or when stdout is closed.
    """
    from remote_agent.monitor.sampler import Sampler, host_sources

    problem = check_telemetry_period(period)
    if problem is not None:
        problem = "--period " + problem
    elif duration is not None and not duration > 0:
        problem = "--duration must be a positive number of seconds, not %g" % duration
    if problem:
        return _refuse(out, None, problem)
    log = EventLog(out)
    _hello(log, None)
    stop = threading.Event()

    def on_signal(_signum: int, _frame: Any) -> None:
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, on_signal)
    sampler = Sampler(host_sources(period), period, lambda t, sample: log.emit("sample", t=t, **sample))
    sampler.start()  # from the main thread: the tools it starts die with this process
    deadline = None if duration is None else time.monotonic() + duration
    try:
        while not stop.wait(0.1):
            if sampler.wait(0) or (deadline is not None and time.monotonic() >= deadline):
                break
    finally:
        sampler.stop()
    if isinstance(sampler.failure, OSError):
        # stdout is gone (the reader closed it): nobody is left to tell, and Python's own flush at
        # exit must not fail on the closed pipe either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    if sampler.failure is not None:
        log.emit("error", kind="internal", message="telemetry sampling failed: %s: %s"
                 % (type(sampler.failure).__name__, sampler.failure), detail="")
        log.emit("end", status="failed")
        return EXIT_AGENT_DIED
    log.emit("end", status="ok")
    return EXIT_OK


def master(out: IO[bytes], peer: Optional[str]) -> int:
    """Pick this host's address (toward ``peer``) and two free ports for a multi-node run it leads."""
    from remote_agent.multinode import master_endpoint

    try:
        found = master_endpoint(peer)
    except OSError as exc:
        sys.stderr.write("cannot pick a master address%s: %s\n" % (" toward %s" % peer if peer else "", exc))
        return EXIT_BAD_INPUT
    out.write((json.dumps(found) + "\n").encode("utf-8"))
    out.flush()
    return EXIT_OK


def stage(request_text: str, run_id: str, out: IO[bytes]) -> int:
    """Prepare a Slurm job's folder (``runs/<run_id>/``): the spec and the request its nodes read.

    Prints the folder (the app writes the batch script there and submits it); each node's own
    run folder is made by ``_slurm_node`` on the node.
    """
    try:
        check_run_id(run_id)
        request = json.loads(request_text)
        spec, _node = parse_run_request({"spec": request.get("spec")} if isinstance(request, dict) else request)
    except (SpecError, ValueError, AttributeError) as exc:
        sys.stderr.write("bad run request: %s\n" % exc)
        return EXIT_BAD_INPUT
    job = RunDir.for_id(run_id)
    problem = preflight_problem(runs_root())  # the nodes' run folders live there too (a shared home)
    if problem is not None:
        sys.stderr.write("%s\n" % problem)
        return EXIT_BAD_INPUT
    try:
        os.makedirs(os.path.dirname(job.path), mode=0o700, exist_ok=True)
        os.mkdir(job.path, 0o700)
    except FileExistsError:
        sys.stderr.write("run %s already exists on this host\n" % run_id)
        return EXIT_BAD_INPUT
    with open(job.spec, "w") as handle:
        json.dump(spec.to_dict(), handle, indent=1)
    with open(os.path.join(job.path, "request.json"), "w") as handle:
        json.dump({k: v for k, v in request.items() if k != "spec"}, handle)
    out.write((json.dumps({"path": job.path}) + "\n").encode("utf-8"))
    out.flush()
    return EXIT_OK
