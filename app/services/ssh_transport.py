"""``SshTransport``: the agent on a remote host, over one reused paramiko connection.

It implements the same ``Transport`` interface as ``LocalTransport``, so
RunSession and probe_host work unchanged.  The connection is opened (and the
host prepared: Python chosen, agent uploaded if its hash is missing) on first
use and reopened when it has dropped; each agent command is one SSH channel.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path

import paramiko

from app.core.errors import ConnectError, DeployError
from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services.agent_bundle import AgentBundle, agent_argv, ensure_bundle
from app.services.deploy import NEURON_VENV_GLOB, SETUP_FORMAT, RemoteSetup, prepare_host
from app.services.host_libraries import ensure_libraries, libraries_for_command, missing_sentence
from app.services.known_hosts import KnownHosts
from app.services.remote_exec import EXIT_FILE_MISSING, open_command
from app.services.ssh_connect import (
    CONNECT_TIMEOUT_S,
    Endpoint,
    KeyRing,
    SshConnection,
    app_known_hosts,
    connect,
    endpoints_for,
)
from app.services.ssh_prompts import NoPrompts, SshPrompts
from app.services.transport import AgentProcess, StderrTail, Transport

# After the stream's EOF, how long the exit status may take to arrive before the connection counts as lost.
EXIT_STATUS_WAIT_S = 5.0
# A remembered setup's first command: 97, the agent file is gone; 126/127, the Python is.
_STALE_CODES = (EXIT_FILE_MISSING, 126, 127)


class SshAgentProcess(AgentProcess):
    """One agent command on one SSH channel."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self._channel = channel
        self._stdout = channel.makefile("rb")
        self._first: bytes | None = None
        self._stderr = StderrTail(channel.makefile_stderr("rb"), f"ssh-stderr-{channel.get_id()}")

    def _readline(self) -> bytes:
        try:
            return self._stdout.readline()
        except (OSError, EOFError, paramiko.SSHException):
            return b""  # the connection broke mid-line; connection_lost() tells the caller

    def first_line(self) -> bytes:
        """Wait for the first line (kept for lines()); b"" if the command ended without output."""
        if self._first is None:
            self._first = self._readline()
        return self._first

    def lines(self) -> Iterator[bytes]:
        line = self.first_line()
        while line:
            yield line
            line = self._readline()

    def wait(self, timeout: float | None = None) -> int | None:
        if not self._channel.status_event.wait(timeout):
            return None
        status = self._channel.exit_status
        return None if status == -1 else status

    def connection_lost(self) -> bool:
        """True when the stream ended without the command's exit status: the connection (or sshd) went away.

        An agent that stopped on its own always exits with a status (and says why on stderr).
        """
        self._channel.status_event.wait(EXIT_STATUS_WAIT_S)
        lost = self._channel.exit_status == -1
        if lost:
            self._channel.close()
        return lost

    def stderr_text(self) -> str:
        return self._stderr.text()

    def kill(self) -> None:
        self._channel.close()


class SshTransport(Transport):
    """A host reached over SSH (a saved HostProfile that is not ``--local``)."""

    def __init__(self, profile: HostProfile, paths: AppPaths, prompts: SshPrompts | None = None,
                 profiles: dict[str, HostProfile] | None = None, keyring: KeyRing | None = None,
                 known_hosts: KnownHosts | None = None, venv_glob: str = NEURON_VENV_GLOB,
                 connect_timeout: float = CONNECT_TIMEOUT_S, on_progress=None,
                 endpoints: list[Endpoint] | None = None) -> None:
        self.profile = profile
        self.host = profile.name
        self.paths = paths
        self.prompts = prompts or NoPrompts()
        self.profiles = profiles or {}
        self.keyring = keyring or KeyRing()
        self.known_hosts = known_hosts or app_known_hosts(paths.config)
        self.venv_glob = venv_glob
        self.connect_timeout = connect_timeout
        self.on_progress = on_progress
        self.endpoints = endpoints  # given for a launched instance (from ~/.ssh/config); else from the profile
        self._conn: SshConnection | None = None
        self._setup: RemoteSetup | None = None
        self._verified = False  # the setup was checked on the host by this transport
        self._bundle: AgentBundle | None = None
        self._lock = threading.RLock()

    @property
    def bundle(self) -> AgentBundle:
        if self._bundle is None:
            self._bundle = ensure_bundle(self.paths.agent_builds)
        return self._bundle

    def connection(self) -> SshConnection:
        """The open connection, (re)opened if there is none or it has dropped."""
        with self._lock:
            if self._conn is not None and not self._conn.is_active():
                self._conn.close()
                self._conn = None
            if self._conn is None:
                chain = self.endpoints or endpoints_for(self.profile, self.profiles)
                self._conn = connect(chain, self.known_hosts, self.prompts, self.keyring, self.connect_timeout)
            return self._conn

    def setup(self, fresh: bool = False, libraries: Sequence[str] = ()) -> RemoteSetup:
        """The host prepared for the agent, once per transport (a reconnect reuses it).

        A host prepared before by this computer (same address, Python choice and
        agent hash) is not inspected again: its first command runs guarded, and if
        the agent or the Python has gone the host is prepared anew.  ``fresh``
        inspects regardless (``hosts test``).  ``libraries`` (deploy.MODEL_LIBRARIES)
        that the host's Python lacks are offered to the person; a remembered "lacks"
        is looked at again on the host first.
        """
        with self._lock:
            if self._setup is None and not fresh:
                self._setup = self._remembered()
                self._verified = False
            lacking = self._setup is not None and any(name in self._setup.missing for name in libraries)
            if self._setup is None or fresh or (lacking and not self._verified):
                self._setup = prepare_host(self.connection().transport, self.profile, self.bundle, self.venv_glob,
                                           self.on_progress)
                self._verified = True
                self._remember(self._setup)
            if any(name in self._setup.missing for name in libraries):
                self._setup = ensure_libraries(self.connection().transport, self.profile, self._setup, libraries,
                                               self.prompts, self._wheels_dir, self.on_progress or (lambda _t: None))
                self._remember(self._setup)
            return self._setup

    @property
    def _wheels_dir(self) -> Path:
        return self.paths.cache / "wheels"

    def _setup_for(self, args: Sequence[str], stdin: bytes | None, fresh: bool = False) -> RemoteSetup:
        """The setup for one agent command: a run whose model needs a library the host lacks stops here."""
        needs = libraries_for_command(args, stdin)
        setup = self.setup(fresh=fresh, libraries=needs)
        for name in needs:
            if name in setup.missing:
                raise DeployError(missing_sentence(setup, self.host, name, self._wheels_dir))
        return setup

    def _memory_file(self) -> Path:
        key = json.dumps([self.profile.hostname, self.profile.port, self.profile.user, self.profile.python,
                          self.profile.proxy_jump, self.venv_glob, self.bundle.name, SETUP_FORMAT])
        return self.paths.cache / "hosts" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"

    def _remembered(self) -> RemoteSetup | None:
        try:
            return RemoteSetup(**{**json.loads(self._memory_file().read_text()), "uploaded": False,
                                  "upload_via": ""})
        except (OSError, ValueError, TypeError):
            return None

    def _remember(self, setup: RemoteSetup) -> None:
        path = self._memory_file()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(asdict(setup)))
        os.replace(tmp, path)

    def _exec(self, argv: list[str], stdin: bytes | None, require_file: str | None = None) -> SshAgentProcess:
        channel = open_command(self.connection().transport, argv, require_file=require_file)
        try:
            if stdin:
                channel.sendall(stdin)
            channel.shutdown_write()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            channel.close()
            raise ConnectError(f"the connection to {self.host} broke while starting the agent: {exc}") from None
        return SshAgentProcess(channel)

    def start(self, args: Sequence[str], stdin: bytes | None = None) -> AgentProcess:
        setup = self._setup_for(args, stdin)
        argv = agent_argv(setup.python, setup.agent_path, list(args))
        if self._verified:
            return self._exec(argv, stdin)
        process = self._exec(argv, stdin, require_file=f"{setup.agent_path}/__main__.py")
        if not process.first_line() and process.wait(EXIT_STATUS_WAIT_S) in _STALE_CODES:
            with self._lock:  # the remembered agent or Python is gone: prepare the host again
                self._setup = None
            setup = self._setup_for(args, stdin, fresh=True)
            return self._exec(agent_argv(setup.python, setup.agent_path, list(args)), stdin)
        self._verified = True
        return process

    def describe(self) -> str:
        python = self._setup.python if self._setup else (self.profile.python or "python chosen on first use")
        return f"{self.profile.address} ({python})"

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
