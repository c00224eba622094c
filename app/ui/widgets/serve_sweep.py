"""A serve run's Sweep tab: a row per load level, beside it p99 TTFT by output tok/s with the SLO's line.

The rows are app/core/serve_levels' (the reports' and the CLI's): TTFT and TPOT p50/p99, output tok/s, the error
rate and whether the level met the SLO, in the order run; a run stored before the error rate was kept says N/A.
A level that missed the SLO is in the error colour, its misses on the tooltip.  The chart is the live view's knee
curve, a point per level named by its load.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QSplitter, QTableWidget, QTableWidgetItem, QWidget

from app.core.serve_levels import error_rate_text, level_row, slo_word
from app.ui import theme
from app.ui.widgets.charts import nice_ceiling, set_range, set_title, style_plot

COLUMNS = ("Load", "In/out", "Requests", "Errors", "Error rate", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms",
           "TPOT p99 ms", "output tok/s", "SLO")
CHART_TITLE = "p99 TTFT (ms) by output tok/s, a point per level"


def _num(value: float | None, fmt: str) -> str:
    return "N/A" if value is None else format(value, fmt)


class ServeSweep(QSplitter):
    """The table of levels (``table``) and the chart (``plot``), fed with the run's levels by ``show_levels``."""

    def __init__(self, slo: dict[str, float] | None, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.slo = slo or {}
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.plot_widget = pg.PlotWidget()
        self.plot = self.plot_widget.getPlotItem()
        self.plot.getAxis("bottom").setLabel("output tok/s")
        self.plot.getAxis("left").setLabel("p99 TTFT", units="ms")
        self.knee = self.plot.plot([], [], symbol="o", symbolSize=7)
        self.limit = pg.InfiniteLine(angle=0, movable=False)
        if "ttft_p99" in self.slo:
            self.limit.setValue(self.slo["ttft_p99"])
            self.plot.addItem(self.limit)
        self.names: list[pg.TextItem] = []
        self.addWidget(self.table)
        self.addWidget(self.plot_widget)
        self.setStretchFactor(0, 3)
        self.setStretchFactor(1, 2)
        self._shown = -1
        self._levels: list[dict[str, Any]] = []
        self.restyle()

    def show_levels(self, levels: list[dict[str, Any]]) -> None:
        if len(levels) == self._shown:
            return
        self._shown, self._levels = len(levels), list(levels)
        rows = [level_row(level, self.slo or None) for level in levels]
        self.table.setRowCount(len(rows))
        error = QBrush(theme.error_text_colour(self.palette()))
        for index, row in enumerate(rows):
            missed = row["slo_met"] is False
            tip = "; ".join(row["slo_misses"]) if missed else ""
            cells = (row["load"], f"{row['input_len']}/{row['output_len']}", _num(row["requests"], ","),
                     _num(row["errors"], ","), error_rate_text(row), _num(row["ttft_p50_ms"], ".3g"),
                     _num(row["ttft_p99_ms"], ".3g"), _num(row["tpot_p50_ms"], ".3g"), _num(row["tpot_p99_ms"], ".3g"),
                     _num(row["output_tok_s"], ",.1f"), slo_word(row))
            for column, text in enumerate(cells):
                item = self.table.item(index, column)
                if item is None:  # a cell's item is set once: Qt refuses to set an item the table already owns
                    item = QTableWidgetItem()
                    self.table.setItem(index, column, item)
                item.setText(text)
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setToolTip(tip)
                item.setForeground(error if missed else self.palette().text())
        self._draw(rows)

    def _draw(self, rows: list[dict[str, Any]]) -> None:
        points = sorted((r["output_tok_s"], r["ttft_p99_ms"], r["load"]) for r in rows
                        if r["output_tok_s"] is not None and r["ttft_p99_ms"] is not None)
        x = np.array([p[0] for p in points], dtype=float)
        y = np.array([p[1] for p in points], dtype=float)
        self.knee.setData(x, y)
        while len(self.names) < len(points):
            name = pg.TextItem("", color=theme.plot_foreground(self.palette()), anchor=(0, 1))
            self.plot.addItem(name)
            self.names.append(name)
        for index, name in enumerate(self.names):
            name.setVisible(index < len(points))
            if index < len(points):
                name.setText(points[index][2])
                name.setPos(points[index][0], points[index][1])
        set_range(self.plot, "x", nice_ceiling(float(np.nanmax(x, initial=0.0)) * 1.15 or 1.0))
        top = max(float(np.nanmax(y, initial=0.0)), self.slo.get("ttft_p99", 0.0))
        set_range(self.plot, "y", nice_ceiling(top * 1.15 or 1.0))

    def restyle(self) -> None:
        pal = self.palette()
        colour = theme.series_colour(0, pal)
        self.knee.setPen(pg.mkPen(colour, width=2))
        self.knee.setSymbolBrush(colour)
        self.knee.setSymbolPen(None)
        self.limit.setPen(pg.mkPen(theme.series_colour(5, pal), width=1, style=Qt.PenStyle.DashLine))
        slo = f" · SLO {self.slo['ttft_p99']:g} ms dashed" if "ttft_p99" in self.slo else ""
        set_title(self.plot, CHART_TITLE + slo, pal)
        self.plot_widget.setBackground(theme.plot_background(pal))
        style_plot(self.plot, pal)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and hasattr(self, "knee"):
            self.restyle()
            self._shown = -1
            self.show_levels(self._levels)

    def cell_text(self, row: int, column: str) -> str:
        item = self.table.item(row, COLUMNS.index(column))
        return item.text() if item else ""

    def knee_points(self) -> list[tuple[float, float]]:
        x, y = self.knee.getOriginalDataset()
        return list(zip([] if x is None else x.tolist(), [] if y is None else y.tolist(), strict=True))
