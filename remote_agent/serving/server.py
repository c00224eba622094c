"""The life of the server a serve run starts: launch, readiness, log, stop — never one left running.

The server runs in a process group of its own (``start_new_session``) so that stopping it reaches every
process it started (vLLM's engine cores, uvicorn's workers), through ``agent _exec``, which arms Linux's
parent-death signal first: if the workload process is killed (the supervisor, or the whole agent, died),
the server gets SIGTERM from the kernel.  It inherits the run's environment marker, so ``cancel`` finds it
even outside the group.  Its output goes to ``server.log`` in the run folder, kept with the run.
"""
from __future__ import annotations

import os
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
                 "insufficient memory", "failed to allocate", "cannot allocate memory")


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
                tail = log_tail(self.log_path)
                raise ServerError("the server was not ready after %g s (GET /v1/models: %s); its last log lines: %s"
                                  % (timeout_s, last_problem, tail or "(none)"))
            time.sleep(READY_POLL_S)

    def _died(self, code: int) -> ServerError:
        tail = log_tail(self.log_path)
        lower = tail.lower()
        how = "was killed by signal %d" % -code if code < 0 else "exited with code %d" % code
        if any(text in lower for text in PORT_IN_USE):
            return ServerError("the server %s: port %d is in use on the host; its last log lines: %s"
                               % (how, self.port, tail), "bad_spec")
        if any(text in lower for text in OUT_OF_MEMORY):
            return ServerError("the server %s: the model does not fit the device memory; its last log lines: %s"
                               % (how, tail), "oom")
        return ServerError("the server %s during start; its last log lines: %s" % (how, tail or "(none)"))

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
