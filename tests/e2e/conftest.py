"""Fixtures for tests against a real OpenSSH server on 127.0.0.1 (see sshd.py)."""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.sshd import SshServer, keygen, make_server, sshd_unavailable


@dataclass
class SshClient:
    home: Path  # HOME of the client side: ~/.ssh/known_hosts lives here
    key: Path  # a private key the test servers accept


@pytest.fixture
def ssh_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SshClient:
    """An isolated client: HOME in a temp folder (no real known_hosts, no real keys) and no ssh-agent."""
    reason = sshd_unavailable()
    if reason:
        pytest.skip(reason)
    home = tmp_path / "client-home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return SshClient(home=home, key=keygen(tmp_path / "client_key"))


@pytest.fixture
def sshd(tmp_path: Path, ssh_client: SshClient):
    """A started sshd that accepts ``ssh_client.key``; the remote Python is this test's Python (it has torch)."""
    server = make_server(tmp_path / "sshd", ssh_client.key).start()
    yield server
    server.stop()


@pytest.fixture
def ssh_env(cli_env: dict[str, str], ssh_client: SshClient) -> dict[str, str]:
    """Environment for CLI subprocesses that talk to the test sshd."""
    env = dict(cli_env)
    env["HOME"] = str(ssh_client.home)
    env.pop("SSH_AUTH_SOCK", None)
    return env


def remote_profile(server: SshServer, name: str = "box", **overrides):
    """The server as a host profile whose Python is this interpreter (venv with torch, timm)."""
    overrides.setdefault("python", sys.executable)
    return server.profile(name, **overrides)


def add_host(data_dir: Path, profile) -> None:
    from app.paths import AppPaths
    from app.services.hosts_store import HostsStore

    HostsStore(AppPaths.resolve(data_dir).config).add(profile)


def remote_runs_dir(server: SshServer) -> Path:
    return Path(os.path.join(server.home, ".cache", "neuronbench", "runs"))
