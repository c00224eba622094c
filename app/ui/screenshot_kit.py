"""What the screenshot scenes share: a transport that never starts, saving a widget, a window on scratch settings,
the tiny workload, a recorded run replayed into a view, a dark palette (``app.ui.screenshots`` and its mixins)."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import sys
from pathlib import Path

from PySide6.QtCore import QSettings
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QWidget

from app.core.hosts import HostProfile
from app.core.presets import TINY_VIT_ARGS
from app.paths import AppPaths
from app.services.replay import ReplayTransport, live_stream, read_events, virtual_clock
from app.services.transport import Transport
from app.ui.main_window import MainWindow
from app.ui.screenshot_steps import settle
from app.ui.settings import AppSettings
from remote_agent.protocol import RunSpec, new_run_id

RUNS_DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "runs"
WINDOW_SIZE = (1440, 900)
TINY_MODEL_ARGS = " ".join(f"{k}={v}" for k, v in TINY_VIT_ARGS.items())


class NeverStarted(Transport):
    """The transport of a run shown while its instance launches: the screenshot never starts it."""

    def __init__(self, host: str) -> None:
        self.host = host

    def describe(self) -> str:
        return "i-0f3c9a7e51b2d4c68 (trn1.2xlarge in us-east-1)"


def save(widget: QWidget, out: Path, name: str, saved: list[Path]) -> None:
    settle()
    path = out / name
    if not widget.grab().save(str(path)):
        raise OSError(f"could not write {path}")
    saved.append(path)
    print(f"wrote {path}", file=sys.stderr)


def new_window(paths: AppPaths, settings_file: Path, **kwargs) -> MainWindow:
    if settings_file.exists():
        settings_file.unlink()  # every view starts from a new user's window
    window = MainWindow(paths, AppSettings(QSettings(str(settings_file), QSettings.Format.IniFormat)), **kwargs)
    window.resize(*WINDOW_SIZE)
    window.show()
    return window


def fill_tiny(window: MainWindow, workload: str, **values) -> None:
    form = {"preset": "", "workload": workload, "model": "vit_tiny_patch16_224", "model_args": TINY_MODEL_ARGS,
            "backend": "cpu", "precision": "fp32", "workers": 0, "warmup": 3}
    form.update(values)
    window.workload.set_form_values(form)


def replay_job(window: MainWindow, events_file: str, title: str, samples: list[dict], loops: int = 1,
               pace_s: float = 0.0, recorded_times: bool = False, priced_as: HostProfile | None = None):
    """A view replaying a recorded run; ``recorded_times`` keeps each event's own time (a real run's timeline).

    ``priced_as``: record the replay in the store as a run on that host, priced by its declared instance type.
    """
    events = read_events(RUNS_DATA / events_file)
    spec = RunSpec.from_dict(next(e for e in events if e["type"] == "result")["result"]["spec"])
    transport = ReplayTransport(lambda: live_stream(events, samples, every=10, loops=loops), title,
                                pace=lambda e: 0.0 if e.get("type") == "sample" else pace_s,
                                clock=(lambda: lambda e: e["t"]) if recorded_times else lambda: virtual_clock(10.0))
    run_id = new_run_id()
    recorder = window._recorder_for(priced_as, spec, run_id) if priced_as is not None else None
    job = window.bridge.start_run(transport, spec, run_id=run_id, recorder=recorder)
    view = window.runs.add_run(job, title)
    job.start()
    return view


def dark_palette() -> QPalette:
    """A dark palette as a desktop's dark theme would give (to check that nothing is hard-coded light)."""
    pal = QPalette()
    roles = {QPalette.ColorRole.Window: "#202124", QPalette.ColorRole.WindowText: "#e8eaed",
             QPalette.ColorRole.Base: "#171717", QPalette.ColorRole.AlternateBase: "#2a2a2a",
             QPalette.ColorRole.Text: "#e8eaed", QPalette.ColorRole.Button: "#2d2e30",
             QPalette.ColorRole.ButtonText: "#e8eaed", QPalette.ColorRole.Highlight: "#3b78c4",
             QPalette.ColorRole.HighlightedText: "#ffffff", QPalette.ColorRole.ToolTipBase: "#2d2e30",
             QPalette.ColorRole.ToolTipText: "#e8eaed", QPalette.ColorRole.PlaceholderText: "#9aa0a6"}
    for role, colour in roles.items():
        pal.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor("#7f8388"))
    return pal
