"""Exporting stored runs as a report file from a view: ask where, write on a worker thread, say where it went.

The writing (compare, report document, atomic file write) is app.services.reporting's,
the same code as ``neuronbench report``; this class only asks for the file name
and turns the outcome into a status line (or an error the view shows).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QToolButton, QWidget

from app.core.compare import CompareOptions
from app.paths import AppPaths
from app.reports import FORMATS
from app.services.pricing import load_pricebook
from app.services.reporting import export_runs
from app.ui.bridge import Bridge

FORMAT_FILTERS = {"html": "HTML report (*.html)", "pdf": "PDF report (*.pdf)", "csv": "CSV table (*.csv)",
                  "json": "JSON document (*.json)"}
FORMAT_TIPS = {"html": "one self-contained file with the charts, cost and methodology (opens in any browser)",
               "pdf": "the same report laid out on A4 pages, for printing or sending",
               "csv": "one row per run and batch size, for a spreadsheet",
               "json": "the report document (neuronbench.report/1), for scripts"}


def export_file(paths: AppPaths, run_ids: Sequence[str], fmt: str, path: str,
                options: CompareOptions | None) -> tuple[Path, int]:
    """Runs on a worker thread: the current price book, then the report; returns (file, runs in it)."""
    written = export_runs(paths.runs_db, load_pricebook(paths), run_ids, fmt, path, options)
    return written, len(run_ids)


class ReportExporter(QObject):
    """Exports for one view; ``finished(str)`` carries the status sentence, ``failed(exc)`` the error."""

    finished = Signal(str)
    failed = Signal(object)

    def __init__(self, paths: AppPaths, bridge: Bridge, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.paths, self.bridge = paths, bridge
        self.folder = str(Path.home())
        self.busy = False

    def ask_path(self, parent: QWidget, fmt: str, stem: str) -> str | None:
        """The file to write, from a save dialog (None when cancelled)."""
        suggested = str(Path(self.folder) / f"{stem}.{fmt}")
        path, _ = QFileDialog.getSaveFileName(parent, f"Export {fmt.upper()} report", suggested, FORMAT_FILTERS[fmt])
        if not path:
            return None
        if not Path(path).suffix:
            path += f".{fmt}"
        return path

    def export(self, run_ids: Sequence[str], fmt: str, path: str, options: CompareOptions | None = None) -> None:
        """Write the report on a worker thread; ``finished`` or ``failed`` follows on the UI thread."""
        self.folder = str(Path(path).expanduser().parent)
        self.busy = True
        self.bridge.call(f"export-{fmt}", export_file, self.paths, list(run_ids), fmt, path, options,
                         on_done=self._done, on_failed=self._failed)

    def _done(self, outcome: tuple[Path, int]) -> None:
        self.busy = False
        path, count = outcome
        self.finished.emit(f"Wrote the {path.suffix.lstrip('.').upper() or 'report'} report of {count} run(s) "
                           f"to {path}")

    def _failed(self, exc: BaseException) -> None:
        self.busy = False
        self.failed.emit(exc)


class ExportButtons(QWidget):
    """"Export:" then one button per format; ``requested(fmt)`` when one is clicked."""

    requested = Signal(str)

    def __init__(self, what: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel("Export:"))
        # Tool buttons: compact, so that the views fit a 1280-pixel-wide window beside the hosts panel.
        self.buttons: dict[str, QToolButton] = {}
        for fmt in FORMATS:
            button = QToolButton()
            button.setText(fmt.upper())
            button.setToolTip(f"export {what} as {FORMAT_TIPS[fmt]}")
            button.clicked.connect(self._clicked(fmt))
            layout.addWidget(button)
            self.buttons[fmt] = button

    def _clicked(self, fmt: str) -> Callable[[], None]:
        return lambda: self.requested.emit(fmt)

    def set_enabled(self, enabled: bool) -> None:
        for button in self.buttons.values():
            button.setEnabled(enabled)
