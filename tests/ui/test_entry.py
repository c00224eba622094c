"""`neuronbench` alone opens the desktop app; any subcommand is the CLI (which needs no display)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

import app
from app import __main__ as entry
from app.ui.app import display_problem
from tests.conftest import REPO


@pytest.fixture
def opened(monkeypatch):
    calls = []
    monkeypatch.setattr(entry, "open_desktop_app", lambda data_dir: calls.append(data_dir) or 0)
    return calls


def test_no_arguments_open_the_desktop_app(opened):
    assert entry.main([]) == 0 and opened == [None]
    assert entry.main(["--data-dir", "/tmp/nb"]) == 0 and entry.main(["--data-dir=/tmp/nb2"]) == 0
    assert opened == [None, "/tmp/nb", "/tmp/nb2"]


def test_a_subcommand_runs_the_cli(opened, capsys):
    with pytest.raises(SystemExit) as done:
        entry.main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"neuronbench {app.__version__}"
    assert entry.main(["run", "--host", "local"]) == 2  # the CLI's own refusal
    assert opened == []


def test_the_cli_works_without_a_display_and_the_app_says_why_it_cannot_open(cli_env):
    env = {k: v for k, v in cli_env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    version = subprocess.run([sys.executable, "-m", "app", "--version"], capture_output=True, text=True, env=env,
                             cwd=REPO, timeout=60)
    assert version.returncode == 0 and version.stdout.strip() == f"neuronbench {app.__version__}"
    gui = subprocess.run([sys.executable, "-m", "app"], capture_output=True, text=True, env=env, cwd=REPO,
                         timeout=60)
    assert gui.returncode == 1
    assert gui.stderr.strip() == ("neuronbench: error: no display to open the desktop app on (DISPLAY and "
                                  "WAYLAND_DISPLAY are unset): use the CLI (neuronbench --help), or run it where "
                                  "a desktop session is")


def test_a_display_or_a_chosen_platform_lets_the_app_open(monkeypatch):
    if not sys.platform.startswith("linux"):
        pytest.skip("the display check is for Linux desktops")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("DISPLAY", ":0")
    assert display_problem() is None
    monkeypatch.delenv("DISPLAY")
    assert display_problem() is not None
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    assert display_problem() is None


def test_the_cli_package_never_loads_qt():
    code = "import sys, app.cli, app.__main__; print(any(m.startswith(('PySide6', 'pyqtgraph')) for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.strip() == "False", out.stderr
