"""`neuronbench` alone opens the desktop app; any subcommand is the CLI (which needs no display)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import app
from app import __main__ as entry
from app.ui.app import display_problem
from tests.conftest import DATA, REPO


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


# ---------------------------------------------------------------------------- a display Qt cannot use
def _gui(env: dict[str, str]) -> subprocess.CompletedProcess:
    """The real entry point with no arguments (the desktop app), as `neuronbench` starts it."""
    return subprocess.run([sys.executable, "-m", "app"], capture_output=True, text=True, env=env, cwd=REPO,
                          timeout=60)


def _without_display(cli_env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in cli_env.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}


def test_x11_asked_for_without_a_display_is_one_sentence_not_a_qt_abort(cli_env, tmp_path):
    gui = _gui(dict(_without_display(cli_env), QT_QPA_PLATFORM="xcb"))
    assert gui.returncode == 1, gui.stderr  # not -6 (SIGABRT) and no core dump
    assert gui.stderr == ("neuronbench: error: no display to open the desktop app on (DISPLAY and WAYLAND_DISPLAY "
                          "are unset): use the CLI (neuronbench --help), or run it where a desktop session is\n")


def _xcb_plugin() -> Path:
    from app.ui.qt_platform import xcb_plugin_file

    plugin = xcb_plugin_file()
    assert plugin is not None, "PySide6 ships libqxcb.so on Linux"
    return plugin


@pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("ldd"), reason="X11 on Linux, ldd")
def test_an_x11_display_qt_cannot_use_is_named_with_what_is_missing(cli_env):
    # A display number no X server listens on.  Whether Qt's X11 plugin can load at all depends on this
    # machine's libraries: what ldd says is missing is what the sentence must name, with its apt-get line.
    display = next(f":{n}" for n in range(917, 999) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    ldd = subprocess.run(["ldd", str(_xcb_plugin())], capture_output=True, text=True, check=True).stdout
    missing = list(dict.fromkeys(line.split()[0] for line in ldd.splitlines() if "=> not found" in line))
    gui = _gui(dict(_without_display(cli_env), QT_QPA_PLATFORM="xcb", DISPLAY=display))
    assert gui.returncode == 1, gui.stderr
    assert gui.stderr.count("\n") == 1 and gui.stderr.startswith("neuronbench: error: "), gui.stderr
    if missing:
        assert f"these system libraries are missing: {', '.join(missing)};" in gui.stderr
        assert "`sudo apt-get install -y libxcb-" in gui.stderr
    else:
        assert f"Qt could not connect to the X display '{display}'" in gui.stderr


def test_ldd_output_names_the_missing_libraries_and_their_debian_packages():
    from app.ui.qt_platform import apt_get_line, missing_from_ldd, packages_for

    recorded = (DATA / "qt" / "ldd-libqxcb-debian12.txt").read_text()
    missing = missing_from_ldd(recorded)
    assert missing == ["libxcb-icccm.so.4", "libxcb-keysyms.so.1"]  # each once, though ldd lists them twice
    assert apt_get_line(packages_for(missing)) == "sudo apt-get install -y libxcb-icccm4 libxcb-keysyms1"
    # The libraries a new user's fresh Debian/Ubuntu desktop lacked, by the name the loader asks for.
    issue = ["libxcb-icccm.so.4", "libxcb-image.so.0", "libxcb-keysyms.so.1", "libxcb-render-util.so.0",
             "libxcb-xinerama.so.0", "libxcb-xkb.so.1", "libxkbcommon-x11.so.0", "libxcb-shape.so.0",
             "libxcb-randr.so.0", "libxcb-cursor.so.0"]
    assert packages_for(issue) == ["libxcb-icccm4", "libxcb-image0", "libxcb-keysyms1", "libxcb-render-util0",
                                   "libxcb-xinerama0", "libxcb-xkb1", "libxkbcommon-x11-0", "libxcb-shape0",
                                   "libxcb-randr0", "libxcb-cursor0"]


@pytest.mark.skipif(not shutil.which("dpkg-query"), reason="checks the mapping against Debian's package database")
def test_every_library_ldd_finds_maps_to_the_package_that_holds_it():
    from app.ui.qt_platform import debian_package

    ldd = subprocess.run(["ldd", str(_xcb_plugin())], capture_output=True, text=True, check=True).stdout
    checked = 0
    for line in ldd.splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] != "=>" or not parts[2].startswith(("/lib", "/usr/lib")):
            continue  # not found, or one of PySide6's own
        # dpkg knows a file by the path its package installed it at: /usr/lib/... on a merged-/usr system.
        candidates = dict.fromkeys([parts[2], "/usr" + parts[2], os.path.realpath(parts[2])])
        owners = [subprocess.run(["dpkg-query", "-S", path], capture_output=True, text=True) for path in candidates]
        found = [o.stdout for o in owners if o.returncode == 0]
        if not found:
            continue  # not from a Debian package (a library installed by hand)
        package = found[0].split(":")[0]
        assert debian_package(parts[0]) == package, parts[0]
        checked += 1
    assert checked > 20


def test_qt_messages_while_the_application_starts_still_reach_the_terminal(qapp, capfd):
    from PySide6.QtCore import qWarning

    from app.ui.qt_platform import start_application

    assert start_application(lambda: qWarning("held back until the application exists") or 7) == 7
    assert "held back until the application exists" in capfd.readouterr().err


def test_make_app_installs_or_names_what_the_window_lacks_before_starting_it(tmp_path):
    # Under `make test` the parent make's MAKEFLAGS/MAKELEVEL add "Leaving directory" lines: run it as a user would.
    clean_env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS", "MAKEOVERRIDES")}
    dry = subprocess.run(["make", "--no-print-directory", "-n", "app"], capture_output=True, text=True, cwd=REPO,
                         timeout=60, env=clean_env)
    lines = [line for line in dry.stdout.splitlines() if line.strip()]
    assert lines[-2:] == [".venv/bin/python -m app.ui.qt_platform --install", ".venv/bin/neuronbench"]
    # Where it cannot install (no apt-get on PATH here), it prints the apt-get line and lets the app start.
    out = subprocess.run([sys.executable, "-m", "app.ui.qt_platform", "--install"], capture_output=True, text=True,
                         cwd=REPO, timeout=60, env={**os.environ, "PATH": str(tmp_path)})
    assert out.returncode == 0 and out.stdout == ""
    from app.ui.qt_platform import window_packages_missing

    missing = window_packages_missing()
    if missing:
        assert out.stderr.strip().endswith(f"install them with: sudo apt-get install -y {' '.join(missing)}")
    else:
        assert out.stderr == ""


def test_anything_else_qt_reports_is_one_sentence_with_qts_reason(cli_env):
    gui = _gui(dict(_without_display(cli_env), QT_QPA_PLATFORM="nosuchplatform", DISPLAY=":917"))
    assert gui.returncode == 1 and gui.stderr.count("\n") == 1, gui.stderr
    assert gui.stderr.startswith("neuronbench: error: Qt could not start its 'nosuchplatform' platform plugin "
                                 "(Could not find the Qt platform plugin \"nosuchplatform\" in \"\"); set "
                                 "QT_QPA_PLATFORM to one that works here (")
    assert "offscreen" in gui.stderr and gui.stderr.endswith("the CLI works without a display (neuronbench --help)\n")


def test_an_x_server_that_refuses_is_named_when_the_libraries_are_there():
    from app.ui.qt_platform import platform_failure

    # What Qt 6 says on its way down when the X11 plugin loads but the display does not answer.
    said = ["could not connect to display :917",
            'Could not load the Qt platform plugin "xcb" in "" even though it was found.',
            "This application failed to start because no Qt platform plugin could be initialized. Reinstalling "
            "the application may fix this problem.\n\nAvailable platform plugins are: offscreen, xcb, wayland.\n"]
    assert platform_failure(said, {"DISPLAY": ":917"}, missing=lambda: []) == (
        "Qt could not connect to the X display ':917': check that the X server is running and that this user may "
        "use it (XAUTHORITY, xhost); the CLI works without a display (neuronbench --help)")
