"""Helpers for tests against a real OpenSSH server on 127.0.0.1 (see sshd.py; the fixtures ``ssh_client``,
``sshd`` and ``ssh_env`` are in tests/conftest.py, so the GUI tests use them too)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

from tests.e2e.sshd import SshServer


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
