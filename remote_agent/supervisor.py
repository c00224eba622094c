"""The detached supervisor of one run (``agent _supervise RUN_DIR``).

It runs in its own session (setsid), so a dropped SSH connection does not stop
it.  It owns the run's event log: it says hello, probes the host, starts the
workload processes (torchrun for several workers; one fresh process per batch
size for inference, since the Neuron runtime must never be forked), numbers and
appends their events, turns their stdout/stderr into ``log`` events, and ends
with a ``result`` and an ``end`` event whatever happens.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from typing import Any, Dict, List, Optional, Set

from remote_agent.capacity import (
    multinode_problem,
    multinode_warnings,
    native_data_parallel,
    neuron_problem,
    nproc_problem,
)
from remote_agent.diskspace import Reserve, full_sentence, is_disk_full
from remote_agent.eventlog import EventLog, emit_hello
from remote_agent.filewatch import FileWatch
from remote_agent.follow import LineReader
from remote_agent.launch import child_env
from remote_agent.launch_plan import Launch, plan_launches
from remote_agent.model_ref import strip_model_file_text
from remote_agent.monitor.digest import TelemetryDigest, measure_windows, switched_off
from remote_agent.monitor.sampler import Sampler, host_sources
from remote_agent.multinode import load_placement, node_env, rendezvous_failure
from remote_agent.orphan import ENV_PARENT_PID
from remote_agent.protocol import (
    EVENT_TYPES,
    NodePlacement,
    RunSpec,
)
from remote_agent.rundir import RunDir, tail_text, write_pid_file
from remote_agent.stderr_pump import DISK_FULL_TEXTS, StderrPump
from remote_agent.summary import (
    compose_result,
    failed_point,
    run_status,
    summarize_generate,
    summarize_infer,
    summarize_train,
)

TERMINATE_GRACE_S = 10.0
# The relay loop wakes on a worker's write, a signal (SIGCHLD: the workload ended; SIGTERM) or this
# period at the latest: a backstop, so that nothing hangs if a wake-up were ever lost.
RELAY_BACKSTOP_S = 1.0
HELLO_WAIT_S = 10.0

_SIGNAL_HINTS = {
    signal.SIGKILL: "it was killed (SIGKILL); the kernel's out-of-memory killer does this when memory runs "
                    "out, so check `dmesg` and try a smaller --batch-size",
    signal.SIGSEGV: "it crashed (SIGSEGV) inside native code",
    signal.SIGTERM: "it was terminated (SIGTERM) by someone else",
}


class Supervisor:
    def __init__(self, run: RunDir) -> None:
        self.run = run
        self.events: EventLog = None  # type: ignore[assignment]  # opened in main()
        self.cancelled = False
        self.error: Optional[Dict[str, Any]] = None
        self.launch_error: Optional[Dict[str, Any]] = None  # the first error of the workload process now running
        self.steps: List[Dict[str, Any]] = []
        self.warnings: List[str] = []
        self.proc: Optional[subprocess.Popen] = None
        self._readers: Dict[str, LineReader] = {}
        self.phases: List[Dict[str, Any]] = []
        self.sampler: Optional[Sampler] = None
        self.digest: Optional[TelemetryDigest] = None
        self.telemetry_off = "the run stopped before sampling began"
        self.node: Optional[NodePlacement] = None  # this node's place in a multi-node run
        self.extra_env: Dict[str, str] = {}
        self.joined: Set[int] = set()  # ranks of this node whose process group came up
        self.watch: Optional[FileWatch] = None  # wakes the relay loop (set up in main())
        self.disk_full = False  # the run folder's disk filled up: the run is being stopped
        self.reserve = Reserve(run.path)  # made by `run`; given up to write the run's last events
        self.pump: Optional[StderrPump] = None
        self._full_lock = threading.Lock()

    # ---------------------------------------------------------------- signals
    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.cancelled = True
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()

    # ------------------------------------------------------------ full disk
    def on_disk_full(self) -> None:
        """A write into the run folder found its disk full (from any thread): stop the run, say why at the end.

        The error event is written last, with the Result, once the reserve made room for them.
        """
        with self._full_lock:
            first = not self.disk_full
            self.disk_full = True
        if not first:
            return
        self.error = self._disk_error()
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()  # torchrun passes it on to its workers; run_launch kills what stays

    def _disk_error(self) -> Dict[str, Any]:
        return {"kind": "runtime", "message": full_sentence(self.run.path), "detail": ""}

    # ----------------------------------------------------------------- relay
    def relay(self) -> bool:
        """Number and append every new event the workers wrote to their side files; True if any."""
        try:
            names = sorted(os.listdir(self.run.workers_dir))
        except OSError:
            return False
        relayed = False
        for name in names:
            if not name.endswith(".jsonl"):
                continue
            reader = self._readers.get(name)
            if reader is None:
                reader = self._readers[name] = LineReader(os.path.join(self.run.workers_dir, name))
            for line in reader.read_lines():
                event = _worker_event(line)
                if event is None:
                    # A worker killed mid-write (or a full disk) leaves a line cut short: say so, keep going.
                    self.events.emit("log", level="warning", message="a workload process wrote a line that is "
                                     "not an event (cut short?), skipped: %r" % line[:120])
                else:
                    self._relay_one(event)
                relayed = True
        return relayed

    def _relay_one(self, event: Dict[str, Any]) -> None:
        type_, t = event.pop("type"), event.pop("t", None)
        event.pop("v", None)
        if type_ == "step":
            self.steps.append(event)
        elif type_ == "log" and isinstance(event.get("joined"), int):
            self.joined.add(event["joined"])
        elif type_ == "phase":
            self.phases.append(dict(event, t=time.time() if t is None else t))
        elif type_ == "error" and self.launch_error is None:
            self.launch_error = event  # this sweep point's own sentence (the run's error is the first one)
        if type_ == "error" and self.error is None:
            if any(text.decode() in str(event.get("message", "")) for text in DISK_FULL_TEXTS):
                self.on_disk_full()  # a worker could not write: the sentence names the folder, not a traceback
                return
            self.error = event
        self.events.emit(type_, t=t, **event)

    # ---------------------------------------------------------------- launch
    def run_launch(self, launch: Launch) -> int:
        env = child_env()
        env.update(self.extra_env)
        env[ENV_PARENT_PID] = str(os.getpid())
        self.proc = subprocess.Popen(launch.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, env=env, cwd=self.run.path)
        self.events.emit("log", level="info", message="workload process %d started%s"
                         % (self.proc.pid, launch.describe()), pid=self.proc.pid)
        pump = self.pump = StderrPump(self.proc.stdout, self.run.stderr_log, self.events, self.on_disk_full)
        pump.start()
        watch = self.watch or self._watch_workers()
        deadline: Optional[float] = None
        while self.proc.poll() is None:
            active = self.relay()
            if (self.cancelled or self.disk_full) and deadline is None:
                deadline = time.monotonic() + TERMINATE_GRACE_S
            timeout = RELAY_BACKSTOP_S
            if deadline is not None:
                if time.monotonic() > deadline:
                    self.proc.kill()
                    deadline = time.monotonic() + RELAY_BACKSTOP_S  # and again if it is still there then
                timeout = min(timeout, max(0.0, deadline - time.monotonic()))
            watch.wait(timeout, active)
        pump.join(timeout=5)
        self.relay()
        code = self.proc.returncode
        # Stopped by us (a cancel, or the full disk: on_disk_full terminated it): not a death to report.  The
        # full disk's own sentence is the run's error; "terminated by someone else" before it was wrong.
        if code != 0 and self.launch_error is None and not self.cancelled and not self.disk_full:
            if pump.said_disk_full():
                self.on_disk_full()  # the worker died of the full disk: say that, not its traceback
            else:
                self.launch_error = self._exit_error(code)
                self.error = self.error or self.launch_error
                self.events.emit("error", **self.launch_error)
        return code

    def _watch_workers(self) -> FileWatch:
        """Wake the relay loop when a worker appends an event, or when a signal arrives.

        Workers keep writing side files, one per rank, rather than one pipe: torchrun does not
        pass descriptors on to its workers, and several ranks' lines longer than PIPE_BUF (an
        error's traceback) would interleave in one pipe.  Signals reach the loop through
        ``signal.set_wakeup_fd``: SIGCHLD says the workload ended, SIGTERM asks for a cancel.
        """
        wake_read, wake_write = os.pipe()
        for fd in (wake_read, wake_write):
            os.set_blocking(fd, False)
        signal.set_wakeup_fd(wake_write)
        signal.signal(signal.SIGCHLD, _wake_only)
        self.watch = FileWatch(self.run.workers_dir, lambda name: name.endswith(".jsonl"), [wake_read])
        return self.watch

    def _exit_error(self, code: int) -> Dict[str, Any]:
        if self.node is not None and not self.joined:
            # A node of a multi-node run whose ranks never joined: say what the rendezvous did.
            failure = rendezvous_failure(self.node, tail_text(self.run.stderr_log, 16000))
            if failure is not None:
                return dict(failure, detail=tail_text(self.run.stderr_log))
        if code < 0:
            try:
                hint = _SIGNAL_HINTS.get(signal.Signals(-code), "it died of signal %d" % -code)
            except ValueError:
                hint = "it died of signal %d" % -code
        else:
            hint = "it exited with code %d" % code
        return {"kind": "oom" if code == -signal.SIGKILL else "runtime",
                "message": "the workload process stopped before finishing: %s" % hint,
                "detail": tail_text(self.run.stderr_log)}

    # ------------------------------------------------------------- telemetry
    def start_telemetry(self, spec: RunSpec) -> None:
        """Sample the host from now until the workload ends: setup, compile, warm-up and measure."""
        if not spec.telemetry_period:
            self.telemetry_off = "telemetry was switched off (telemetry_period 0)"
            return
        try:
            # The workload is everything this supervisor starts (torchrun, workers, data loaders).
            sources = host_sources(spec.telemetry_period, root_pid=os.getpid(),
                                   neuron_config=self.run.monitor_config)
            self.digest = TelemetryDigest(spec.telemetry_period, [source.name for source in sources])
            self.sampler = Sampler(sources, spec.telemetry_period, self._on_sample)
            self.sampler.start()
        except Exception as exc:  # telemetry is an extra: its failure must not cost the benchmark
            self.sampler = None
            self.telemetry_off = "telemetry could not start: %s: %s" % (type(exc).__name__, exc)
            self.events.emit("log", level="warning", message=self.telemetry_off)

    def _on_sample(self, t: float, sample: Dict[str, Any]) -> None:
        self.events.emit("sample", t=t, **sample)
        assert self.digest is not None
        self.digest.add(t, sample)

    def stop_telemetry(self) -> Dict[str, Any]:
        """Stop sampling; the Result's telemetry block."""
        if self.sampler is None or self.digest is None:
            return switched_off(self.telemetry_off)
        self.sampler.stop(final_sample=True)
        return self.digest.summary(measure_windows(self.phases, time.time()))

    # ------------------------------------------------------------- pre-flight
    def preflight(self, spec: RunSpec, env: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """Refuse, before any workload process starts, a spec this host cannot run (an error event)."""
        # serve: --nproc is the server's tensor parallel degree, and the server itself says what it cannot split.
        problem = None if spec.workload == "serve" else nproc_problem(spec.workload, spec.backend, spec.nproc, env)
        if problem is None and spec.nnodes > 1 and self.node is None:
            problem = ("a %d-node run needs each node's place (rank, master address): start it with "
                       "`neuronbench run --nodes ...` or on a Slurm host" % spec.nnodes)
        problem = problem or multinode_problem(spec.nnodes, spec.backend, env)
        problem = problem or neuron_problem(spec, env)
        if problem is None:
            return None
        error = {"kind": "bad_spec", "message": problem, "detail": ""}
        self.events.emit("error", **error)
        return error

    # ------------------------------------------------------------------ main
    def _spec_for_hello(self) -> Optional[Dict[str, Any]]:
        try:
            with open(self.run.spec) as handle:
                spec = json.load(handle)
        except (OSError, ValueError):
            return None  # reported properly below, where the spec is parsed for real
        return strip_model_file_text(spec) if isinstance(spec, dict) else None

    def _open_log(self) -> EventLog:
        """Continue the log after the hello ``run`` writes as it starts us (or write it, if ``run`` died first)."""
        deadline = time.monotonic() + HELLO_WAIT_S
        while time.monotonic() < deadline:
            try:
                if os.path.getsize(self.run.events) > 0:
                    return EventLog.open(self.run.events, next_seq=2)
            except OSError:
                pass
            time.sleep(0.005)
        log = EventLog.open(self.run.events)
        emit_hello(log, self.run.run_id, os.getpid(), self._spec_for_hello())
        return log

    def main(self) -> int:
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})  # blocked by `run`
        self.events = self._open_log()
        self.events.on_full = self.on_disk_full
        try:
            write_pid_file(self.run, os.getpid())
        except OSError as exc:
            if not is_disk_full(exc):
                raise
            self.on_disk_full()  # `run` wrote our pid already; the run ends here, saying why
        self._watch_workers()  # before any worker writes: no event is missed
        spec_dict: Dict[str, Any] = {}
        env: Optional[Dict[str, Any]] = None
        backend: Optional[Dict[str, Any]] = None
        train = infer = generate = serve = None
        model: Optional[Dict[str, Any]] = None
        status = "failed"
        try:
            with open(self.run.spec) as handle:
                spec_dict = json.load(handle)
            spec = RunSpec.from_dict(spec_dict)
            self.node = load_placement(self.run)
            self.events.emit("phase", name="setup", state="start")
            from remote_agent.probe import collect_env

            env = collect_env()
            self.events.emit("probe", env=env)
            self.start_telemetry(spec)
            self.events.emit("phase", name="setup", state="end")
            sizes: List[Dict[str, Any]] = []
            points: List[Dict[str, Any]] = []
            worker: Dict[str, Any] = {}
            self.error = self.preflight(spec, env) or self.error  # a full disk already said why
            self.extra_env = node_env(self.node, spec, env)
            self.warnings.extend(multinode_warnings(spec.nnodes, spec.backend, env))
            launches = [] if self.error else plan_launches(spec, self.run, self.node, native_data_parallel(spec, env))
            for launch in launches:
                if self.cancelled or self.disk_full:
                    break
                self.launch_error = None
                self.run_launch(launch)
                summary_path = self.run.worker_summary(launch.index)
                if os.path.exists(summary_path):
                    with open(summary_path) as handle:
                        worker = json.load(handle)
                    backend = worker.get("backend", backend)
                    model = model or worker.get("model")
                    self.warnings.extend(worker.get("warnings", []))
                    if spec.workload == "infer":
                        sizes.append(summarize_infer(worker))
                    elif spec.workload == "generate":
                        points.append(summarize_generate(worker))
                    elif spec.workload == "serve":
                        serve = worker.get("serve")
                elif self.launch_error is not None and spec.workload in ("infer", "generate"):
                    # The point that failed stays in the sweep with its sentence (the run is then "partial")
                    (sizes if spec.workload == "infer" else points).append(failed_point(
                        launch.batch_size, launch.seq_len, launch.lengths, self.launch_error))
                if self.error is not None and not (spec.workload == "generate" and self.error.get("kind") == "oom"):
                    break  # a failed batch size stops the sweep; finished sizes are kept (generate: an OOM
                    # at one point does not: the other points are still measured)
            if spec.workload == "train":
                train = summarize_train(self.steps, spec.warmup, worker, self.warnings) if self.steps else None
            elif spec.workload == "generate":
                generate = points
            elif spec.workload == "infer":
                infer = sizes
            status = run_status(self.cancelled, self.error, sizes if spec.workload == "infer" else points)
        except Exception as exc:
            import traceback

            if is_disk_full(exc):
                self.on_disk_full()
            else:
                self.error = {"kind": "internal", "message": "the agent failed: %s: %s"
                              % (type(exc).__name__, exc), "detail": traceback.format_exc()}
                self.events.emit("error", **self.error)
        finally:
            telemetry = self.stop_telemetry()
            if self.disk_full:
                status = "failed"
                self.error = self._disk_error() if self.error is None else self.error
                self.reserve.release()  # room for the error, the Result and the end
                self.events.emit("error", **self.error)
            self.events.emit("phase", name="teardown", state="start")
            result = compose_result(self.run.run_id, strip_model_file_text(spec_dict), env, status, self.error,
                                    backend, train, infer, self.warnings, telemetry, model, generate,
                                    serve=serve)
            self.events.emit("result", result=result)
            self.events.emit("phase", name="teardown", state="end")
            self.events.emit("end", status=status)
            self.events.close()
            self.reserve.release()
            if self.disk_full:
                _quiet_exit()
        return 0


def _quiet_exit() -> None:
    """Nothing more to say, and nowhere to say it: stderr (agent.log) is on the full disk too, and Python
    exits with code 120 when it cannot flush it.  The reason is in the event log."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)


def _worker_event(line: bytes) -> Optional[Dict[str, Any]]:
    """A worker's side-file line as an event dict, or None when it is not one."""
    try:
        event = json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
    return event if isinstance(event, dict) and event.get("type") in EVENT_TYPES else None


def _wake_only(_signum: int, _frame: Any) -> None:
    """A handler that only makes the signal reach ``set_wakeup_fd`` (SIGCHLD is ignored by default)."""


def main(run_path: str) -> int:
    return Supervisor(RunDir(run_path)).main()
