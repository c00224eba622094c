"""The frozen (PyInstaller) app: it prints its version, probes `local` with a separate Python, builds the
same agent zipapp from its bundled sources, and its desktop app starts.

The build (about a minute) happens once per test session; NEURONBENCH_FROZEN_APP names an already built
binary to test instead, and NEURONBENCH_SKIP_FROZEN=1 leaves these out of a quick local run.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

import app
from app.services.agent_bundle import ensure_bundle

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.frozen,
    pytest.mark.skipif(bool(os.environ.get("NEURONBENCH_SKIP_FROZEN")), reason="NEURONBENCH_SKIP_FROZEN is set"),
]


@pytest.fixture(scope="session")
def frozen_app(tmp_path_factory) -> Path:
    prebuilt = os.environ.get("NEURONBENCH_FROZEN_APP")
    if prebuilt:
        return Path(prebuilt)
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run(["sh", str(REPO / "packaging" / "build.sh"), str(dist)], check=True, timeout=1800,
                   env={**os.environ, "PYTHON": sys.executable})
    return dist / "neuronbench" / "neuronbench"


VENV_BIN = Path(sys.executable).parent  # its python3 has torch and timm (the venv's, not the base one)


@pytest.fixture
def env_with_python3(tmp_path) -> dict[str, str]:
    """A PATH whose first python3 is the test venv's, and a fresh data dir."""
    assert (VENV_BIN / "python3").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("NEURONBENCH_LOCAL_PYTHON", "PYTHONPATH")}
    env.update(PATH=f"{VENV_BIN}{os.pathsep}/usr/bin:/bin", NEURONBENCH_DATA_DIR=str(tmp_path / "data"))
    return env


def test_the_frozen_app_prints_its_version(frozen_app):
    out = subprocess.run([str(frozen_app), "--version"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"neuronbench {app.__version__}"


def test_the_frozen_app_probes_local_with_python3_from_path(frozen_app, env_with_python3, tmp_path):
    out = subprocess.run([str(frozen_app), "probe", "--host", "local", "--json"], capture_output=True, text=True,
                         timeout=300, env=env_with_python3)
    assert out.returncode == 0, out.stderr
    probe = json.loads(out.stdout)
    assert probe["host"] == "local"
    assert probe["env"]["python"]["executable"] == str(VENV_BIN / "python3")
    assert probe["env"]["torch"]  # the host Python's packages, not the app's
    # The agent it shipped was zipped from the bundled sources: the same bytes as from this checkout.
    (built,) = (tmp_path / "data" / "cache" / "agent").glob("neuronbench-agent-*.pyz")
    assert built.name == ensure_bundle(tmp_path / "from-source").path.name
    assert "remote_agent/protocol.py" in zipfile.ZipFile(built).namelist()


def test_the_frozen_app_without_python3_says_what_to_do(frozen_app, env_with_python3, tmp_path):
    env = dict(env_with_python3, PATH=str(tmp_path / "empty"))
    out = subprocess.run([str(frozen_app), "probe", "--host", "local"], capture_output=True, text=True,
                         timeout=120, env=env)
    assert out.returncode == 1
    assert "no python3 is on PATH" in out.stderr and "NEURONBENCH_LOCAL_PYTHON" in out.stderr


def test_the_frozen_desktop_app_starts_and_probes_this_computer(frozen_app, env_with_python3, tmp_path):
    env = dict(env_with_python3, QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path))  # settings go to this HOME
    agents = tmp_path / "data" / "cache" / "agent"
    process = subprocess.Popen([str(frozen_app)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=env)
    try:
        # The window probes "This computer" at start: the agent it builds for that shows the app is up.
        deadline = time.monotonic() + 120
        while process.poll() is None and not list(agents.glob("*.pyz")) and time.monotonic() < deadline:
            time.sleep(0.2)  # another process: poll for its visible effect
        assert list(agents.glob("*.pyz")), "the desktop app never probed this computer"
        assert process.poll() is None, process.communicate()[1]
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=30)
    assert "Traceback" not in err
