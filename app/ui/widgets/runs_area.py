"""Several live runs side by side (one view per host), redrawn together on one ~10 Hz timer."""
from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QGridLayout, QLabel, QScrollArea, QStackedWidget, QWidget

from app.ui.bridge import RunJob
from app.ui.widgets.live_run_view import LiveRunView

REDRAW_MS = 100   # each view is redrawn at 10 Hz...
SLOTS = 5         # ...in one of 5 slots 20 ms apart, so a grid of views never paints all in one go
WIDE_VIEW_SIZE = (560, 560)      # a run alone: charts two abreast
NARROW_VIEW_WIDTH = 440          # runs side by side: each view's charts in one column...
NARROW_VIEW_HEIGHT = 1250        # ...stacked, so the area scrolls down


def columns_for(count: int, width: int) -> int:
    """One run fills the area; more go two abreast where two fit (the area scrolls down past that)."""
    fits = max(1, width // (NARROW_VIEW_WIDTH + 8))
    return max(1, min(count, 2, fits))


class RunsArea(QStackedWidget):
    """A placeholder until the first run, then a scrollable grid of LiveRunViews."""

    error_raised = Signal(str, str, str)
    run_finished = Signal(object)   # the LiveRunView
    all_finished = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.placeholder = QLabel("No run yet.\n\nPick the hosts on the left, choose a workload, then "
                                  "Run on the selected hosts (Ctrl+R).")
        self.placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.placeholder.setWordWrap(True)
        self.placeholder.setEnabled(False)  # drawn in the palette's muted text colour
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.grid_host = QWidget()
        self.grid = QGridLayout(self.grid_host)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(8)
        self.scroll.setWidget(self.grid_host)
        self.addWidget(self.placeholder)
        self.addWidget(self.scroll)
        self.views: list[LiveRunView] = []
        self._columns = 1
        self.timer = QTimer(self)
        self.timer.setInterval(REDRAW_MS // SLOTS)
        self.timer.timeout.connect(self.redraw)
        self._tick = 0

    def clear(self) -> None:
        """Remove the views of finished runs (a run still going keeps its view)."""
        for view in list(self.views):
            if view.done:
                self.views.remove(view)
                self.grid.removeWidget(view)
                view.job.deleteLater()
                view.deleteLater()
        self._relayout()

    def add_run(self, job: RunJob, title: str, node: int | None = None) -> LiveRunView:
        """A view of ``job``; of one node's part when ``node`` is given (a multi-node run has one view a node)."""
        view = LiveRunView(job, title, node=node)
        view.error_raised.connect(self.error_raised)
        view.finished.connect(self._on_view_finished)
        self.views.append(view)
        self._relayout()
        self.setCurrentWidget(self.scroll)
        if not self.timer.isActive():
            self.timer.start()
        return view

    def _relayout(self) -> None:
        for view in self.views:
            self.grid.removeWidget(view)
        columns = columns_for(len(self.views), self.scroll.viewport().width())
        self._columns = columns
        for i, view in enumerate(self.views):
            view.set_chart_columns(2 if columns == 1 else 1)
            view.setMinimumSize(*(WIDE_VIEW_SIZE if columns == 1 else (NARROW_VIEW_WIDTH, NARROW_VIEW_HEIGHT)))
            self.grid.addWidget(view, i // columns, i % columns)
        for column in range(2):
            self.grid.setColumnStretch(column, 1 if column < columns else 0)
        if not self.views:
            self.setCurrentWidget(self.placeholder)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self.views and columns_for(len(self.views), self.scroll.viewport().width()) != self._columns:
            self._relayout()

    def redraw(self) -> None:
        """The timer's tick: redraw this slot's views, where they changed and can be seen."""
        self._tick = (self._tick + 1) % SLOTS
        for index, view in enumerate(self.views):
            if index % SLOTS == self._tick and not view.visibleRegion().isEmpty():
                view.refresh()
        if not self.active_views():
            self.timer.stop()  # nothing is moving: no timer while idle

    def active_views(self) -> list[LiveRunView]:
        return [view for view in self.views if not view.done]

    def _on_view_finished(self, view: LiveRunView) -> None:
        self.run_finished.emit(view)
        if not self.active_views():
            self.all_finished.emit()

    def stop(self) -> None:
        self.timer.stop()
