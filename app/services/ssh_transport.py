"""``SshTransport``: the agent on a remote host, over one reused paramiko connection.

It implements the same ``Transport`` interface as ``LocalTransport``, so
RunSession and probe_host work unchanged.  The connection is opened (and the
host prepared: Python chosen, agent uploaded if its hash is missing) on first
use and reopened when it has dropped; each agent command is one SSH channel.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

import paramiko

from app.core.errors import ConnectError
from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services.agent_bundle import AgentBundle, ensure_bundle
from app.services.deploy import NEURON_VENV_GLOB, RemoteSetup, prepare_host
from app.services.known_hosts import KnownHosts
from app.services.remote_exec import open_command
from app.services.ssh_connect import CONNECT_TIMEOUT_S, KeyRing, SshConnection, app_known_hosts, connect, endpoints_for
from app.services.ssh_prompts import NoPrompts, SshPrompts
from app.services.transport import AgentProcess, StderrTail, Transport

# After the stream's EOF, how long the exit status may take to arrive before the connection counts as lost.
EXIT_STATUS_WAIT_S = 5.0


class SshAgentProcess(AgentProcess):
    """One agent command on one SSH channel."""

    def __init__(self, channel: paramiko.Channel) -> None:
        self._channel = channel
        self._stderr = StderrTail(channel.makefile_stderr("rb"), f"ssh-stderr-{channel.get_id()}")

    def lines(self) -> Iterator[bytes]:
        stdout = self._channel.makefile("rb")
        try:
            while True:
                line = stdout.readline()
                if not line:
                    return
                yield line
        except (OSError, EOFError, paramiko.SSHException):
            return  # the connection broke mid-line; connection_lost() tells the caller

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
                 connect_timeout: float = CONNECT_TIMEOUT_S, on_progress=None) -> None:
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
        self._conn: SshConnection | None = None
        self._setup: RemoteSetup | None = None
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
                self._conn = connect(endpoints_for(self.profile, self.profiles), self.known_hosts, self.prompts,
                                     self.keyring, self.connect_timeout)
            return self._conn

    def setup(self) -> RemoteSetup:
        """The host prepared for the agent (done once per transport; a reconnect reuses it)."""
        with self._lock:
            conn = self.connection()
            if self._setup is None:
                self._setup = prepare_host(conn.transport, self.profile, self.bundle, self.prompts,
                                           self.paths.cache / "wheels", self.venv_glob, self.on_progress)
            return self._setup

    def start(self, args: Sequence[str], stdin: bytes | None = None) -> AgentProcess:
        setup = self.setup()
        channel = open_command(self.connection().transport, [setup.python, setup.agent_path, *args])
        try:
            if stdin:
                channel.sendall(stdin)
            channel.shutdown_write()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            channel.close()
            raise ConnectError(f"the connection to {self.host} broke while starting the agent: {exc}") from None
        return SshAgentProcess(channel)

    def describe(self) -> str:
        python = self._setup.python if self._setup else (self.profile.python or "python chosen on first use")
        return f"{self.profile.address} ({python})"

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
