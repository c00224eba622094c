"""Which Python runs the `local` host's agent: the app's own, except in a frozen app (where it cannot)."""
from __future__ import annotations

import os
import sys

import pytest

from app.core.errors import DeployError
from app.services import transport
from app.services.transport import ENV_LOCAL_PYTHON, LocalTransport, local_python


def test_the_apps_own_python_runs_the_local_agent(monkeypatch):
    monkeypatch.delenv(ENV_LOCAL_PYTHON, raising=False)
    monkeypatch.delattr(sys, "frozen", raising=False)
    assert local_python() == sys.executable


def test_a_configured_python_wins(monkeypatch):
    monkeypatch.setenv(ENV_LOCAL_PYTHON, "/opt/neuron/bin/python3")
    assert local_python() == "/opt/neuron/bin/python3"
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert local_python() == "/opt/neuron/bin/python3"


def test_a_frozen_app_uses_the_first_python3_on_path(monkeypatch, tmp_path, app_paths):
    monkeypatch.delenv(ENV_LOCAL_PYTHON, raising=False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    (tmp_path / "python3").symlink_to(sys.executable)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert local_python() == str(tmp_path / "python3")
    assert LocalTransport(app_paths).python == str(tmp_path / "python3")


def test_a_frozen_app_without_python3_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_LOCAL_PYTHON, raising=False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(transport.shutil, "which", lambda _name: None)
    with pytest.raises(DeployError, match=f"no python3 is on PATH: .* or set {ENV_LOCAL_PYTHON} to its path"):
        local_python()
