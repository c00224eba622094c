"""Where a run lives on the host: ``<cache>/neuronbench/runs/<run_id>/``.

The run directory is the run's memory.  The spec, every event (``events.jsonl``),
the workload's stderr and the supervisor's pid are written there as they happen,
so a dropped connection or a restarted app loses nothing: it attaches again and
replays from the last ``seq`` it holds.
"""
from __future__ import annotations

import os
import time
from typing import List, Optional

from remote_agent.protocol import check_run_id
from remote_agent.slurm_job import job_alive


def agent_home() -> str:
    """The agent's cache root (``NEURONBENCH_AGENT_HOME``, else ``$XDG_CACHE_HOME/neuronbench``)."""
    override = os.environ.get("NEURONBENCH_AGENT_HOME")
    if override:
        return override
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "neuronbench")


def runs_root() -> str:
    return os.path.join(agent_home(), "runs")


def private_site() -> str:
    """Packages the app installed for the agent (timm, when the host's Python lacked it)."""
    return os.path.join(agent_home(), "site")


class RunDir:
    """Paths inside one run directory."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.run_id = os.path.basename(os.path.normpath(path))

    @classmethod
    def for_id(cls, run_id: str) -> RunDir:
        return cls(os.path.join(runs_root(), check_run_id(run_id)))

    def create(self) -> None:
        os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
        os.mkdir(self.path, 0o700)  # fails if the run id was used before: never mix two runs
        os.mkdir(self.workers_dir, 0o700)

    def exists(self) -> bool:
        return os.path.isdir(self.path)

    @property
    def spec(self) -> str:
        return os.path.join(self.path, "spec.json")

    @property
    def node(self) -> str:
        """This node's place in a multi-node run (NodePlacement JSON); absent for a one-node run."""
        return os.path.join(self.path, "node.json")

    @property
    def events(self) -> str:
        return os.path.join(self.path, "events.jsonl")

    @property
    def stderr_log(self) -> str:
        """Everything the workload processes wrote to stdout/stderr (compiler and runtime messages)."""
        return os.path.join(self.path, "stderr.log")

    @property
    def agent_log(self) -> str:
        """The supervisor's own stderr: only non-empty when the agent itself failed."""
        return os.path.join(self.path, "agent.log")

    @property
    def monitor_config(self) -> str:
        """The neuron-monitor config the run's telemetry used (its period is the run's)."""
        return os.path.join(self.path, "neuron-monitor.json")

    @property
    def pid_file(self) -> str:
        return os.path.join(self.path, "supervisor.pid")

    @property
    def workers_dir(self) -> str:
        return os.path.join(self.path, "workers")

    def worker_events(self, launch: int, rank: int) -> str:
        return os.path.join(self.workers_dir, "launch%d-rank%d.jsonl" % (launch, rank))

    def worker_summary(self, launch: int) -> str:
        return os.path.join(self.workers_dir, "launch%d-summary.json" % launch)


def tail_text(path: str, max_bytes: int = 4000) -> str:
    """The last ``max_bytes`` of a text file (empty if it does not exist)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - max_bytes))
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def process_start_time(pid: int) -> Optional[str]:
    """Field 22 of /proc/<pid>/stat: tells a live process from a reused pid."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after the last ')'.
    rest = stat[stat.rfind(")") + 2:].split()
    if rest and rest[0] == "Z":
        return None  # a zombie has finished
    return rest[19] if len(rest) > 19 else None


def this_host() -> str:
    import socket  # only for pid files: `attach` on most starts never needs it

    return socket.gethostname()


def write_pid_file(run: RunDir, pid: int) -> None:
    # Both ``run`` and the supervisor write this file: a temporary name of their own each, so
    # one never truncates the other's half-written file, and readers only ever see a whole one.
    # The host name: a Slurm node's run folder is read from the login node too (a shared home).
    tmp = "%s.tmp%d" % (run.pid_file, os.getpid())
    try:
        with open(tmp, "w") as handle:
            handle.write("%d %s %s\n" % (pid, process_start_time(pid) or "?", this_host()))
        os.replace(tmp, run.pid_file)
    except OSError:
        if os.path.exists(tmp):  # a full disk: no empty leftover
            os.unlink(tmp)
        raise


def supervisor_alive(run: RunDir) -> bool:
    """True while the run's supervisor process (the one in the pid file) still runs.

    A supervisor on another machine (a Slurm compute node, seen through a shared home)
    is alive while its Slurm job is.
    """
    try:
        with open(run.pid_file) as handle:
            parts = handle.read().split()
        pid_text, started = parts[0], parts[1]
    except (OSError, ValueError, IndexError):
        return False
    if len(parts) > 2 and parts[2] != this_host():
        return job_alive(run.path)
    return process_start_time(int(pid_text)) == started


def supervisor_pid(run: RunDir) -> Optional[int]:
    try:
        with open(run.pid_file) as handle:
            return int(handle.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


KEEP_RUNS_S = 14 * 24 * 3600


def remove_old_runs(keep_s: float = KEEP_RUNS_S, now: Optional[float] = None) -> List[str]:
    """Delete run directories untouched for ``keep_s`` (14 days) whose supervisor has ended.

    "Untouched" is the newest modification time of the directory and its event
    log, so a long run that is still writing events is never old.
    """
    now = time.time() if now is None else now
    root = runs_root()
    try:
        names = os.listdir(root)
    except OSError:
        return []
    removed = []
    for name in names:
        run = RunDir(os.path.join(root, name))
        try:
            touched = max(os.path.getmtime(p) for p in (run.path, run.events) if os.path.exists(p))
        except (OSError, ValueError):
            continue
        if now - touched > keep_s and os.path.isdir(run.path) and not supervisor_alive(run):
            import shutil  # rarely needed; every `run` imports this module on its way to the first event

            shutil.rmtree(run.path, ignore_errors=True)
            removed.append(name)
    return removed
