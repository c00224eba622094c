"""GUI test fixtures: windows on temporary settings, recorded runs, and a check that nothing is left running.

Every test here fails if it leaves a worker thread alive or a visible window
or active timer behind (napari's habit): a leaked thread is a leaked run.
"""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
import shiboken6
from PySide6.QtCore import QCoreApplication, QEvent, QSettings, QTimer
from PySide6.QtWidgets import QApplication

from app.services.replay import ReplayTransport, live_stream, read_events, virtual_clock
from app.ui.main_window import MainWindow
from app.ui.settings import AppSettings
from remote_agent.protocol import RunSpec

# One definition for the whole folder: a session fixture imported into each test module is defined (and its
# three real runs recorded) once per module.
from tests.ui.stored_runs import copy_store, stored_runs  # noqa: F401

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"
LEAK_WAIT_MS = 15_000


@pytest.fixture(scope="session", autouse=True)
def _settings_never_touch_the_users(tmp_path_factory):
    """A safety net: whatever asks QSettings for its default file gets one in a temporary folder."""
    folder = str(tmp_path_factory.mktemp("qsettings"))
    for fmt in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        for scope in (QSettings.Scope.UserScope, QSettings.Scope.SystemScope):
            QSettings.setPath(fmt, scope, folder)


def _leaked_threads(before: set[int]) -> list[str]:
    return [t.name for t in threading.enumerate() if t.ident not in before and t.is_alive()]


def _live_widgets() -> list[str]:
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    found = []
    for widget in QApplication.topLevelWidgets():
        if not shiboken6.isValid(widget):
            continue
        if widget.isVisible():
            found.append(f"visible window {type(widget).__name__} {widget.objectName()!r}")
        found += [f"active timer in {type(widget).__name__}" for t in widget.findChildren(QTimer) if t.isActive()]
    return found


@pytest.fixture(autouse=True)
def no_leaks(qapp, qtbot):
    """Fail a test that leaves threads, windows or timers behind (checked after its windows are closed)."""
    before = {t.ident for t in threading.enumerate()}
    yield
    try:
        qtbot.waitUntil(lambda: not _leaked_threads(before), timeout=LEAK_WAIT_MS)
    except AssertionError:
        pytest.fail(f"worker threads left running: {_leaked_threads(before)}")
    leftovers = _live_widgets()
    assert leftovers == [], leftovers


@pytest.fixture
def settings_file(tmp_path) -> Path:
    return tmp_path / "settings.ini"


def open_settings(path: Path) -> AppSettings:
    return AppSettings(QSettings(str(path), QSettings.Format.IniFormat))


@pytest.fixture
def make_window(no_leaks, qtbot, app_paths, settings_file):
    """MainWindow factory; windows are closed (runs left going, threads joined) before the leak check."""
    windows: list[MainWindow] = []

    def make(settings: AppSettings | None = None, provider=None, probe_hosts: bool = False,
             load_models: bool = False) -> MainWindow:
        window = MainWindow(app_paths, settings or open_settings(settings_file), provider,
                            probe_hosts=probe_hosts, load_models=load_models)
        windows.append(window)
        window.show()
        qtbot.waitExposed(window)
        return window

    yield make
    for window in windows:
        if shiboken6.isValid(window):
            if window.isVisible():
                window.leave_runs_and_close()
            window.bridge.shutdown()
            window.deleteLater()


def recorded(name: str) -> list[dict]:
    return read_events(RUNS / name)


def spec_of(events: list[dict]) -> RunSpec:
    return RunSpec.from_dict(next(e for e in events if e["type"] == "result")["result"]["spec"])


def replay_transport(events: list[dict], samples: list[dict] = (), host: str = "replay", loops: int = 1,
                     pace_s: float = 0.0) -> ReplayTransport:
    """A host whose agent replays ``events`` (with a sample every 10 events) through the real session layer."""
    return ReplayTransport(lambda: live_stream(events, list(samples), every=10, loops=loops), host,
                           pace=lambda e: 0.0 if e.get("type") == "sample" else pace_s,
                           clock=lambda: virtual_clock(10.0))
