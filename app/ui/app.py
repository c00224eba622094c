"""Starting the desktop app: the QApplication, high-DPI and palette setup, the main window."""
from __future__ import annotations

import sys
import threading

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QIcon
from PySide6.QtWidgets import QApplication, QMessageBox

from app.core.errors import NeuronBenchError
from app.paths import AppPaths, resources_dir
from app.ui.gc_on_gui_thread import collect_garbage_on_gui_thread
from app.ui.qt_platform import display_problem, start_application
from app.ui.settings import APPLICATION, ORGANIZATION, AppSettings, user_settings

__all__ = ["display_problem", "make_application", "run_gui"]

ICON_NAME = "neuronbench"


def app_icon() -> QIcon:
    """The window icon from resources/icons (SVG first: sharp at any scale)."""
    folder = resources_dir() / "icons"
    icon = QIcon()
    svg = folder / f"{ICON_NAME}.svg"
    if svg.exists():
        icon.addFile(str(svg))
    for png in sorted(folder.glob(f"{ICON_NAME}-*.png")):
        icon.addFile(str(png))
    return icon


def make_application(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), set up for high-DPI screens and pyqtgraph."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        return existing
    # Fractional scale factors (125 %, 150 %) as they are, not rounded: crisp text and plots.
    QGuiApplication.setHighDpiScaleFactorRoundingPolicy(Qt.HighDpiScaleFactorRoundingPolicy.PassThrough)
    application = QApplication(argv if argv is not None else sys.argv[:1])
    application.setOrganizationName(ORGANIZATION)
    application.setApplicationName(APPLICATION)
    application.setApplicationDisplayName("NeuronBench")
    application.setDesktopFileName(ICON_NAME)
    application.setWindowIcon(app_icon())
    # Plots take their colours from the palette (app.ui.theme); only anti-aliasing is global.
    pg.setConfigOptions(antialias=True)
    collect_garbage_on_gui_thread()  # never in a worker thread: see app.ui.gc_on_gui_thread
    return application


def run_gui(data_dir: str | None = None) -> int:
    """Open the main window and run until it closes; returns the exit status."""
    from app.ui.main_window import MainWindow

    # A platform plugin that cannot start (no display, X11 libraries missing) ends here with one sentence.
    application = start_application(make_application)
    try:
        window = MainWindow(AppPaths.resolve(data_dir), AppSettings(user_settings()))
    except NeuronBenchError as exc:  # e.g. a damaged run store: say so in a dialog, not only on a terminal
        QMessageBox.critical(None, "NeuronBench cannot start", str(exc))
        return 1

    def show_bug(kind: type[BaseException], error: BaseException, trace) -> None:
        # A bug in a slot: Qt would print it and carry on; the user sees it in the error panel too.
        sys.__excepthook__(kind, error, trace)
        if threading.current_thread() is threading.main_thread() and isinstance(error, Exception):
            window.errors.show_exception("NeuronBench", error)

    sys.excepthook = show_bug
    window.show()
    return application.exec()
