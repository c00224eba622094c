"""Transports start the agent on a host and hand back its stdout/stderr.

``LocalTransport`` runs the built zipapp in a subprocess: the same bytes, argv
and stdin that ``SshTransport`` sends over SSH, so tests of the local path test
the remote one too.
"""
from __future__ import annotations

import collections
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence

from app.core.errors import DeployError
from app.paths import AppPaths
from app.services.agent_bundle import AgentBundle, agent_argv, ensure_bundle

STDERR_KEEP_BYTES = 64 * 1024
ENV_LOCAL_PYTHON = "NEURONBENCH_LOCAL_PYTHON"


def local_python() -> str:
    """The Python that runs the agent for the ``local`` host.

    ``NEURONBENCH_LOCAL_PYTHON`` wins.  Otherwise the app's own interpreter,
    which has torch when installed with ``make app`` -- except in a frozen
    (PyInstaller) app, where ``sys.executable`` is the app binary itself and
    cannot run a zipapp: there the first ``python3`` on PATH runs the agent,
    as it would on a remote host.
    """
    configured = os.environ.get(ENV_LOCAL_PYTHON)
    if configured:
        return configured
    if not getattr(sys, "frozen", False):
        return sys.executable
    found = shutil.which("python3")
    if found is None:
        raise DeployError(f"this packaged app runs benchmarks on this computer with a separate Python, and no "
                          f"python3 is on PATH: install Python 3.8+ (with torch and timm), or set "
                          f"{ENV_LOCAL_PYTHON} to its path")
    return found


class StderrTail:
    """Keeps the last bytes of a stream, read on its own thread so the pipe never fills."""

    def __init__(self, stream, name: str) -> None:
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, args=(stream,), name=name, daemon=True)
        self._thread.start()

    def _pump(self, stream) -> None:
        for chunk in iter(lambda: stream.read1(4096) if hasattr(stream, "read1") else stream.read(4096), b""):
            with self._lock:
                self._chunks.append(chunk)
                self._size += len(chunk)
                while self._size > STDERR_KEEP_BYTES and len(self._chunks) > 1:
                    self._size -= len(self._chunks.popleft())

    def text(self, wait: float = 1.0) -> str:
        self._thread.join(timeout=wait)
        with self._lock:
            return b"".join(self._chunks).decode("utf-8", "replace")


class AgentProcess:
    """A running agent command: iterate its stdout lines, then ``wait()``."""

    def lines(self) -> Iterator[bytes]:
        raise NotImplementedError

    def wait(self, timeout: float | None = None) -> int | None:
        raise NotImplementedError

    def stderr_text(self) -> str:
        raise NotImplementedError

    def kill(self) -> None:
        raise NotImplementedError

    def connection_lost(self) -> bool:
        """After the stream ended: True if the transport lost its connection (the agent may still run).

        False means the agent itself ended (its exit status and stderr say how).
        A local subprocess has no connection to lose.
        """
        return False


class Transport:
    """Where an agent runs.  ``host`` is the name the user knows the machine by."""

    host: str
    # Given back (terminated) when the command ends: a run left on it ends with it (a launched EC2 instance).
    ephemeral = False

    def start(self, args: Sequence[str], stdin: bytes | None = None) -> AgentProcess:
        raise NotImplementedError

    def describe(self) -> str:
        return self.host

    def close(self) -> None:
        """Release connections (nothing to do for a local subprocess)."""

    def run_ended(self, result: dict | None, last: bool = True) -> dict | None:
        """A run on this host ended (``last``: the host's last one); returns its Result, amended if need be.

        A host launched for the run (EC2) is terminated after its last run and adds what it was to the Result.
        """
        return result

    def release(self) -> None:
        """Give the host back (terminate a launched instance); hosts that were already there have nothing to do."""


class LocalAgentProcess(AgentProcess):
    def __init__(self, popen: subprocess.Popen) -> None:
        self._popen = popen
        self._stderr = StderrTail(popen.stderr, f"agent-stderr-{popen.pid}")

    def lines(self) -> Iterator[bytes]:
        assert self._popen.stdout is not None
        yield from iter(self._popen.stdout.readline, b"")

    def wait(self, timeout: float | None = None) -> int | None:
        try:
            return self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stderr_text(self) -> str:
        return self._stderr.text()

    def kill(self) -> None:
        if self._popen.poll() is None:
            self._popen.kill()


class LocalTransport(Transport):
    """The built-in ``local`` host: this computer, with the app's own Python (which has torch).

    ``python`` overrides the interpreter (a host profile's ``--python``); see ``local_python()``.
    """

    def __init__(self, paths: AppPaths, python: str | None = None, host: str = "local") -> None:
        self.paths = paths
        self.python = python or local_python()
        self.host = host
        self._bundle: AgentBundle | None = None

    @property
    def bundle(self) -> AgentBundle:
        if self._bundle is None:
            self._bundle = ensure_bundle(self.paths.agent_builds)
        return self._bundle

    def start(self, args: Sequence[str], stdin: bytes | None = None) -> AgentProcess:
        env = dict(os.environ)
        env["NEURONBENCH_AGENT_HOME"] = str(self.paths.local_agent_home)
        env["PYTHONUNBUFFERED"] = "1"
        try:
            # The terminal's Ctrl-C is the app's to act on (cancel the run, then wait for the cancel):
            # a follower or a cancel that died of it at once would drop the run's stream, or leave the
            # cancel half done.  A watch (`monitor`) is ended by that same Ctrl-C, so it stays.
            popen = subprocess.Popen(agent_argv(self.python, str(self.bundle.path), list(args)),
                                     stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                                     cwd=str(self.paths.cache), start_new_session=list(args)[:1] != ["monitor"])
        except OSError as exc:
            raise DeployError(f"could not start the agent on {self.host} with {self.python}: "
                              f"{exc.strerror or exc} (set {ENV_LOCAL_PYTHON} to a Python 3.8+)") from None
        assert popen.stdin is not None
        try:
            if stdin:
                popen.stdin.write(stdin)
            popen.stdin.close()
        except BrokenPipeError:
            pass  # the agent died at once; its stderr will say why
        return LocalAgentProcess(popen)

    def describe(self) -> str:
        return f"this computer ({self.python})"
