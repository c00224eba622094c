"""The compare view: the chosen runs side by side, the decision summary on top, charts below.

The comparison is the one ``neuronbench compare`` prints (app.services.reporting ->
app.core.compare), computed on a worker thread with the current price book each
time the runs, the baseline or the market change.  A result that arrives after a
newer request is dropped (the generation counter), so a quick click-through never
shows a stale table.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QVBoxLayout,
    QWidget,
)

from app.core.compare import CompareOptions
from app.core.quoting import clean
from app.paths import AppPaths
from app.services.pricing import load_pricebook
from app.services.reporting import Comparison, compare_stored
from app.services.store import RunStore
from app.ui import theme
from app.ui.bridge import Bridge
from app.ui.views.compare_charts import draw_latency, draw_scaling
from app.ui.views.compare_table import (
    COLUMN_TIPS,
    COLUMNS,
    MONITOR,
    category,
    category_label,
    fill_table,
)
from app.ui.views.export import ExportButtons, ReportExporter
from app.ui.views.job_box import JobBox
from app.ui.widgets.charts import new_plot, nice_ceiling, restyle, style_layout
from app.ui.widgets.status_line import StatusLine

MARKETS = (("on_demand", "On-demand prices"), ("spot", "Spot prices"))
BAR_GROUP_WIDTH = 0.8
TABLE_SHARE_MAX = 0.45     # of the height under the summary; the charts get the rest


def compute(paths: AppPaths, run_ids: list[str], options: CompareOptions) -> Comparison:
    """Worker thread: the comparison with the current price book (its own store connection)."""
    book = load_pricebook(paths)
    with RunStore(paths.runs_db) as store:
        return compare_stored(store, book, run_ids, options)


class CompareView(QWidget):
    error_raised = Signal(str, str, str)   # title, sentence, detail: for the app's error panel
    computed = Signal(object)              # the comparison document, once shown

    def __init__(self, paths: AppPaths, bridge: Bridge, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.paths, self.bridge = paths, bridge
        self.run_ids: list[str] = []
        self.doc: dict[str, Any] | None = None
        self.loading = False
        self._generation = 0
        pal = self.palette()

        self.summary = QLabel("Select runs in the history and press Compare.")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setToolTip("the decision summary: worded only as strongly as the measurements allow")
        font = self.summary.font()
        font.setPointSizeF(font.pointSizeF() * 1.1)
        self.summary.setFont(font)
        self.baseline = QComboBox()
        self.baseline.setToolTip("the run the others are measured against (speed, work per dollar)")
        self.baseline.setMinimumContentsLength(16)  # long labels are elided; the list shows them whole
        self.baseline.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.market = QComboBox()
        for key, label in MARKETS:
            self.market.addItem(label, key)
        self.market.setToolTip("price every run with on-demand or with spot prices (spot prices change often "
                               "and differ by zone: `neuronbench prices refresh` fetches current ones)")
        self.export = ExportButtons("this comparison")
        self.job_box = JobBox()
        self.status = StatusLine()

        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        for index, name in enumerate(COLUMNS):
            self.table.horizontalHeaderItem(index).setToolTip(COLUMN_TIPS[name])
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)  # one line a row: long cells are elided, whole on their tooltips
        self.table.setAlternatingRowColors(True)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.setColumnHidden(COLUMNS.index(MONITOR), True)  # until a compared run has the figure
        self.table.resizeColumnsToContents()  # whole headers, not elided ones, before any run is compared

        self.charts = pg.GraphicsLayoutWidget()
        style_layout(self.charts, pal)
        self.throughput_plot = new_plot("Throughput", "per second", pal)
        self.cost_plot = new_plot("$ per 1M samples / inferences", "$", pal)
        self.latency_plot = new_plot("p99 latency vs throughput", "p99 ms", pal)
        self.latency_plot.setLabel("bottom", "inferences/s")
        self.scaling_plot = new_plot("Scaling: throughput by node count", "samples/s", pal)
        self.scaling_plot.setLabel("bottom", "nodes")
        self.plots = (self.throughput_plot, self.cost_plot, self.latency_plot, self.scaling_plot)
        for col, plot in enumerate(self.plots[:3]):
            self.charts.addItem(plot, row=0, col=col)
        # Shown only when one setup ran on several node counts (multi-node runs).
        self.charts.addItem(self.scaling_plot, row=1, col=0, colspan=3)
        self.scaling_plot.setVisible(False)
        self.scaling_curves: dict[str, pg.PlotDataItem] = {}
        self.charts.setToolTip("bars: one colour per run, grouped by batch size; right: one line per run through "
                               "its batch sizes")
        self.legend = QLabel()
        self.legend.setWordWrap(True)
        self.legend.setToolTip("the colour of each run in the charts")
        self.throughput_bars: dict[str, pg.BarGraphItem] = {}
        self.cost_bars: dict[str, pg.BarGraphItem] = {}
        self.latency_curves: dict[str, pg.PlotDataItem] = {}

        controls = QHBoxLayout()
        controls.addWidget(QLabel("Baseline:"))
        controls.addWidget(self.baseline)
        controls.addWidget(self.market)
        controls.addStretch(1)
        controls.addWidget(self.export)
        charts = QWidget()
        charts_layout = QVBoxLayout(charts)
        charts_layout.setContentsMargins(0, 0, 0, 0)
        charts_layout.addWidget(self.charts, 1)
        charts_layout.addWidget(self.legend)
        # No axes without runs: the charts appear with the first comparison and go with the last.
        self.charts_panel = charts
        charts.setVisible(False)
        self.splitter = splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.table)
        splitter.addWidget(charts)
        splitter.setStretchFactor(0, 0)
        splitter.setStretchFactor(1, 1)
        splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addLayout(controls)
        layout.addWidget(self.job_box)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.status)

        self.exporter = ReportExporter(paths, bridge, self)
        self.exporter.finished.connect(self.status.show_message)
        self.exporter.finished.connect(self._update_controls)
        self.exporter.failed.connect(lambda exc: self._show_error("Export failed", exc))
        self.baseline.activated.connect(lambda _: self.recompute())
        self.market.activated.connect(lambda _: self.recompute())
        self.job_box.changed.connect(self.recompute)
        self.export.requested.connect(self.ask_export)
        self._update_controls()

    # -- computing ----------------------------------------------------------------------------------
    def set_runs(self, run_ids: Sequence[str]) -> None:
        """Compare these runs (the first is the baseline until another is picked)."""
        self.run_ids = list(dict.fromkeys(run_ids))
        self.baseline.clear()
        self.recompute()

    def options(self) -> CompareOptions:
        return CompareOptions(baseline=self.baseline.currentData() or None, market=self.market.currentData(),
                              job=self.job_box.job())

    def recompute(self) -> None:
        if not self.run_ids:
            self._clear("Select runs in the history and press Compare.")
            return
        self._generation += 1
        generation = self._generation
        self.loading = True
        self.status.show_message(f"Comparing {len(self.run_ids)} run(s)…")
        self._update_controls()
        self.bridge.call("compare", compute, self.paths, list(self.run_ids), self.options(),
                         on_done=lambda comparison: self._computed(generation, comparison),
                         on_failed=lambda exc: self._failed(generation, exc))

    def _computed(self, generation: int, comparison: Comparison) -> None:
        if generation != self._generation:
            return
        self.loading = False
        self.doc = comparison.doc
        self._fill_baselines(comparison.doc)
        self._show_summary(comparison.doc)
        self._fill_table(comparison.doc)
        self.charts_panel.setVisible(True)
        self._draw(comparison.doc)
        self.job_box.show_doc(comparison.doc)
        market = dict(MARKETS)[comparison.doc["market"]].lower()
        self.status.show_message(f"{len(comparison.runs)} run(s) compared with {market}.")
        self._update_controls()
        self.computed.emit(comparison.doc)

    def _failed(self, generation: int, exc: BaseException) -> None:
        if generation != self._generation:
            return
        self.loading = False
        self._show_error("The runs cannot be compared", exc)
        self._clear(self.status.text())

    def _clear(self, summary: str) -> None:
        self.doc = None
        self.summary.setText(html.escape(summary))
        self.table.setRowCount(0)
        self.table.setColumnHidden(COLUMNS.index(MONITOR), True)
        self.table.resizeColumnsToContents()
        self.charts_panel.setVisible(False)
        for plot in self.plots:
            plot.clear()
        self.throughput_bars.clear()
        self.cost_bars.clear()
        self.latency_curves.clear()
        self.legend.clear()
        self.job_box.show_doc(None)
        self._update_controls()

    def _update_controls(self, *_: Any) -> None:
        ready = self.doc is not None and not self.loading
        self.baseline.setEnabled(ready)
        self.market.setEnabled(ready)
        self.export.set_enabled(ready and not self.exporter.busy)

    # -- showing -----------------------------------------------------------------------------------
    def run_order(self, doc: dict[str, Any]) -> list[str]:
        """Runs in the order asked (the baseline first), each once; the colour index of each run."""
        ids = list(dict.fromkeys(row["run_id"] for row in doc["rows"]))
        return sorted(ids, key=lambda run_id: (run_id != doc["baseline"], self._asked_index(run_id)))

    def _asked_index(self, run_id: str) -> int:
        return self.run_ids.index(run_id) if run_id in self.run_ids else len(self.run_ids)

    def _row_label(self, doc: dict[str, Any], run_id: str) -> str:
        row = next(r for r in doc["rows"] if r["run_id"] == run_id)
        return clean(f"{row['label']} · {run_id}")

    def _fill_baselines(self, doc: dict[str, Any]) -> None:
        self.baseline.blockSignals(True)
        self.baseline.clear()
        for run_id in self.run_order(doc):
            self.baseline.addItem(self._row_label(doc, run_id), run_id)
        self.baseline.setCurrentIndex(max(0, self.baseline.findData(doc["baseline"])))
        self.baseline.blockSignals(False)

    def _show_summary(self, doc: dict[str, Any]) -> None:
        sentences = doc.get("summary") or ["Nothing to say: no run has a result."]
        self.summary.setText("".join(f"<p style='margin:2px 0'>{html.escape(s)}</p>" for s in sentences))

    def group_of(self, doc: dict[str, Any], row: dict[str, Any]) -> dict[str, Any] | None:
        return next((g for g in doc["groups"] if row["run_id"] in g["run_ids"] and g["batch_size"] == row["batch_size"]
                     and g.get("seq_len") == row.get("seq_len")
                     and g["workload"] == row["workload"]), None)

    def _fill_table(self, doc: dict[str, Any]) -> None:
        fill_table(self.table, doc, self.run_order(doc), self.group_of)
        self._fit_table()

    def _fit_table(self) -> None:
        """Give the table the height of its rows (up to a share of the view), the charts the rest."""
        total = sum(self.splitter.sizes())
        if total <= 0:
            return
        rows = self.table.rowCount()
        wanted = (self.table.horizontalHeader().height() + 2 * self.table.frameWidth() + 4
                  + sum(self.table.rowHeight(r) for r in range(rows))
                  + self.table.horizontalScrollBar().sizeHint().height())
        height = min(wanted, int(total * TABLE_SHARE_MAX))
        self.splitter.setSizes([height, total - height])

    def _draw(self, doc: dict[str, Any]) -> None:
        pal = self.palette()
        for plot in self.plots:
            plot.clear()
        self.throughput_bars.clear()
        self.cost_bars.clear()
        self.latency_curves.clear()
        order = self.run_order(doc)
        categories = sorted({category(r) for r in doc["rows"]})
        width = BAR_GROUP_WIDTH / max(1, len(order))
        ticks = [[(i, category_label(key)) for i, key in enumerate(categories)]]
        for plot, bars, field in ((self.throughput_plot, self.throughput_bars, "throughput"),
                                  (self.cost_plot, self.cost_bars, "usd_per_1m")):
            top = 0.0
            for index, run_id in enumerate(order):
                points = [(categories.index(category(r)), r[field]) for r in doc["rows"]
                          if r["run_id"] == run_id and r[field] is not None]
                if not points:
                    continue  # missing is not zero: no bar, the table says N/A and why
                x = np.array([p[0] for p in points], float) - BAR_GROUP_WIDTH / 2 + width * (index + 0.5)
                height = np.array([p[1] for p in points], float)
                item = pg.BarGraphItem(x=x, height=height, width=width * 0.9, brush=theme.series_colour(index, pal),
                                       pen=None)
                plot.addItem(item)
                bars[run_id] = item
                top = max(top, float(height.max()))
            plot.getAxis("bottom").setTicks(ticks)
            plot.setXRange(-0.5, len(categories) - 0.5, padding=0)
            plot.setYRange(0, nice_ceiling(top * 1.05) if top > 0 else 1.0, padding=0)
        self.latency_curves.update(draw_latency(self.latency_plot, doc, order, pal))
        self.scaling_curves.clear()
        self.scaling_curves.update(draw_scaling(self.scaling_plot, doc, pal))
        self.legend.setText("  ".join(
            f"<span style='color:{theme.series_colour(i, pal).name()}'>■</span> "
            f"{html.escape(self._row_label(doc, run_id))}{' (baseline)' if run_id == doc['baseline'] else ''}"
            for i, run_id in enumerate(order)))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and hasattr(self, "plots"):
            pal = self.palette()
            restyle(self.charts, self.plots, pal)
            if self.doc is not None:
                self._draw(self.doc)

    # -- export ------------------------------------------------------------------------------------
    def ask_export(self, fmt: str) -> None:
        if self.doc is None:
            return
        stem = f"neuronbench-compare-{self.doc['baseline']}"
        path = self.exporter.ask_path(self, fmt, stem)
        if path:
            self.export_to(fmt, path)

    def export_to(self, fmt: str, path: str) -> None:
        """Write this comparison (its baseline and prices) as a report, on a worker thread."""
        self.status.show_message(f"Writing the {fmt.upper()} report…")
        self.exporter.export(self.run_ids, fmt, path, self.options())
        self._update_controls()

    def _show_error(self, title: str, exc: BaseException) -> None:
        self.error_raised.emit(title, *self.status.show_exception(exc))
        self._update_controls()

