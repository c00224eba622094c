"""The life of the server a serve run starts: launch, readiness, log, stop — never one left running.

The server runs in a process group of its own (``start_new_session``) so that stopping it reaches every
process it started (vLLM's engine cores, uvicorn's workers), through ``agent _exec``, which arms Linux's
parent-death signal first: if the workload process is killed (the supervisor, or the whole agent, died),
the server gets SIGTERM from the kernel.  It inherits the run's environment marker, so ``cancel`` finds it
even outside the group.  Its output goes to ``server.log`` in the run folder, kept with the run.
"""
from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from typing import Callable, Dict, List, Optional

from remote_agent.launch import agent_command, child_env
from remote_agent.orphan import ENV_PARENT_PID
from remote_agent.serving.sse import RequestFailed, list_models

READY_POLL_S = 0.25
STOP_GRACE_S = 10.0
# What servers print when they cannot bind their port, or run out of device memory.
PORT_IN_USE = ("address already in use", "errno 98", "only one usage of each socket address")
OUT_OF_MEMORY = ("out of memory", "outofmemoryerror", "cuda error: out of memory", "nrt_resource",
                 "insufficient memory", "failed to allocate", "cannot allocate memory",
                 # vLLM CPU: its KV cache (VLLM_CPU_KVCACHE_SPACE) or the model's max length does not fit
                 "on kv cache allocation is less than", "larger than the available kv cache memory")
# A line that raises: "ValueError: ...", "torch.OutOfMemoryError: ...", after vLLM's "(Worker pid=N) ERROR
# 11-29 00:48:12 [file.py:1063] " prefix, if any.
_PREFIX = re.compile(r"^\([\w ]+pid=\d+\)\s+(?:[A-Z]+\s+\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s*)?")
_RAISED = re.compile(r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit)):\s+(\S.*)$")
# argparse refusing the command line: "vllm serve: error: argument --block-size: invalid choice: ..."
_REFUSED = re.compile(r"^([\w.\- ]+: error):\s+(\S.*)$")
# Exceptions that only point elsewhere ("EngineCore encountered an issue. See stack trace (above) for the root
# cause.", "Worker failed with error '...', please check the stack trace above for the root cause").
_WRAPPERS = ("root cause", "see stack trace")
CAUSE_CHARS = 400


class ServerError(Exception):
    """The server could not be started or made ready; the message is the sentence for the user."""

    def __init__(self, message: str, kind: str = "runtime") -> None:
        super().__init__(message)
        self.kind = kind


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        return probe.connect_ex((host, port)) == 0


def log_tail(path: str, lines: int = 8, limit: int = 1500) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]
    return " | ".join(kept)[-limit:]


def log_cause(path: str) -> Optional[str]:
    """The server's own words for why it failed: the first exception raised in its log that is not a pointer to
    another (vLLM logs its root cause first, then wrappers that say "see root cause above"), or None."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 512 * 1024))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        bare = _PREFIX.sub("", line.strip())
        match = _RAISED.match(bare) or _REFUSED.match(bare)
        if match and not any(word in match.group(2).lower() for word in _WRAPPERS):
            cause = "%s: %s" % (match.group(1), match.group(2).strip())
            return cause if len(cause) <= CAUSE_CHARS else cause[:CAUSE_CHARS - 1] + "…"
    return None


class ServerProcess:
    """One server: ``start()``, ``wait_ready()``, ``stop()`` (idempotent; also on any exit path)."""

    def __init__(self, argv: List[str], port: int, log_path: str, env: Optional[Dict[str, str]] = None,
                 cwd: Optional[str] = None, host: str = "127.0.0.1") -> None:
        self.argv, self.port, self.log_path, self.host = argv, port, log_path, host
        self.extra_env = env or {}
        self.cwd = cwd
        self.proc: Optional[subprocess.Popen] = None

    @property
    def pid(self) -> Optional[int]:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        if port_in_use(self.port, self.host):
            raise ServerError("port %d on the host is in use already (another server?): stop it, or let the "
                              "agent pick a port ({port} in --server-cmd)" % self.port, "bad_spec")
        env = child_env()
        env.update(self.extra_env)
        env[ENV_PARENT_PID] = str(os.getpid())
        with open(self.log_path, "ab") as log:
            try:
                self.proc = subprocess.Popen(agent_command() + ["_exec", "--"] + self.argv, stdin=subprocess.DEVNULL,
                                             stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.cwd,
                                             start_new_session=True)
            except OSError as exc:
                raise ServerError("cannot start the server (%s): %s" % (self.argv[0], exc), "bad_spec") from None

    def wait_ready(self, timeout_s: float, cancelled: Callable[[], bool] = lambda: False) -> float:
        """Seconds until ``GET /v1/models`` answered; ServerError with the log's last lines if it died or never did."""
        assert self.proc is not None
        begin = time.monotonic()
        last_problem = ""
        while True:
            code = self.proc.poll()
            if code is not None:
                raise self._died(code)
            if cancelled():
                raise ServerError("cancelled while the server was starting", "cancelled")
            try:
                list_models(self.host, self.port, timeout_s=5.0)
                return time.monotonic() - begin
            except RequestFailed as exc:
                last_problem = str(exc)
                if "not an OpenAI-compatible" in last_problem:
                    raise ServerError("the server on port %d answers, but %s" % (self.port, last_problem),
                                      "bad_spec") from None
            if time.monotonic() - begin > timeout_s:
                raise ServerError("the server was not ready after %g s (GET /v1/models: %s); %s"
                                  % (timeout_s, last_problem, self._log_words()))
            time.sleep(READY_POLL_S)

    def _log_words(self) -> str:
        """The log's cause ("its log says: ValueError: ..."), else its last lines."""
        cause = log_cause(self.log_path)
        if cause:
            return "its log says: %s" % cause
        return "its last log lines: %s" % (log_tail(self.log_path) or "(none)")

    def _died(self, code: int) -> ServerError:
        words = self._log_words()
        lower = (log_tail(self.log_path) + " " + words).lower()
        how = "was killed by signal %d" % -code if code < 0 else "exited with code %d" % code
        if code == -signal.SIGILL:
            how += " (an illegal instruction: this CPU lacks an instruction set the server was built for, such as " \
                   "AVX-512 or AVX2 for vLLM's CPU build)"
        if any(text in lower for text in PORT_IN_USE):
            return ServerError("the server %s: port %d is in use on the host; %s" % (how, self.port, words), "bad_spec")
        if any(text in lower for text in OUT_OF_MEMORY):
            return ServerError("the server %s: the model does not fit the device memory; %s" % (how, words), "oom")
        return ServerError("the server %s during start; %s" % (how, words))

    def exit_code(self) -> Optional[int]:
        """The server's exit code once it has exited, else None."""
        return self.proc.poll() if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace_s: float = STOP_GRACE_S) -> Optional[int]:
        """SIGTERM to the server's process group, SIGKILL after ``grace_s``; its exit code."""
        proc = self.proc
        if proc is None:
            return None
        for signum, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, signum)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                proc.wait(timeout=wait_s)
                # The leader is gone; its group may not be (a child that ignored SIGTERM): once more, hard.
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                break
            except subprocess.TimeoutExpired:
                continue
        return proc.returncode
