"""The compare view's line charts: p99 latency against throughput, and throughput by node count."""
from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.widgets.charts import nice_ceiling


def draw_latency(plot: pg.PlotItem, doc: dict[str, Any], order: list[str], pal: QPalette) -> dict[str, Any]:
    """p99 latency against throughput per inference run, each point labelled with its batch size."""
    curves: dict[str, Any] = {}
    xs, ys = [], []
    for index, run_id in enumerate(order):
        rows = sorted((r for r in doc["rows"] if r["run_id"] == run_id and r["workload"] == "infer"
                       and r["throughput"] is not None and r["latency_p99_ms"] is not None),
                      key=lambda r: r["batch_size"])
        if not rows:
            continue
        colour = theme.series_colour(index, pal)
        x = np.array([r["throughput"] for r in rows], float)
        y = np.array([r["latency_p99_ms"] for r in rows], float)
        curve = plot.plot(x, y, pen=pg.mkPen(colour, width=2), symbol="o", symbolSize=7, symbolBrush=colour,
                          symbolPen=None)
        curves[run_id] = curve
        for row, px, py in zip(rows, x, y, strict=True):
            label = pg.TextItem(f"b{row['batch_size']}", color=theme.plot_foreground(pal), anchor=(0, 1))
            label.setPos(px, py)
            plot.addItem(label)
        xs += list(x)
        ys += list(y)
    if xs:
        plot.setTitle("p99 latency vs throughput (per batch size)", color=theme.plot_foreground(pal), size="9pt")
        plot.setXRange(0, nice_ceiling(max(xs) * 1.15), padding=0)
        plot.setYRange(0, nice_ceiling(max(ys) * 1.15), padding=0)
    else:
        plot.setTitle("p99 latency vs throughput: no inference runs", color=theme.plot_foreground(pal),
                      size="9pt")
    return curves


def draw_scaling(plot: pg.PlotItem, doc: dict[str, Any], pal: QPalette) -> dict[str, Any]:
    """Measured throughput per node count against ideal linear scaling, each point labelled with its efficiency."""
    curves: dict[str, Any] = {}
    rows = doc.get("scaling") or []
    plot.setVisible(bool(rows))
    if not rows:
        return curves
    top, most = 0.0, 1
    for index, family in enumerate(dict.fromkeys(r["family"] for r in rows)):
        mine = [r for r in rows if r["family"] == family]
        colour = theme.series_colour(index, pal)
        nodes = np.array([r["nodes"] for r in mine], float)
        measured = np.array([r["throughput"] for r in mine], float)
        ideal = measured[0] * nodes / nodes[0]
        plot.plot(nodes, ideal, pen=pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine))
        curves[family] = plot.plot(nodes, measured, pen=pg.mkPen(colour, width=2), symbol="o",
                                                symbolSize=7, symbolBrush=colour, symbolPen=None)
        intervals = [r["throughput_ci95"] for r in mine]
        if all(intervals):
            low = measured - np.array([i[0] for i in intervals], float)
            high = np.array([i[1] for i in intervals], float) - measured
            plot.addItem(pg.ErrorBarItem(x=nodes, y=measured, top=high, bottom=low, beam=0.08,
                                         pen=pg.mkPen(colour)))
        for row, x, y in zip(mine, nodes, measured, strict=True):
            label = pg.TextItem(f"{row['efficiency'] * 100:.0f}%", color=theme.plot_foreground(pal), anchor=(0, 1))
            label.setPos(x, y)
            plot.addItem(label)
        top = max(top, float(ideal.max()), float(measured.max()))
        most = max(most, int(nodes.max()))
    model = rows[0]["model"].split("(")[0].split(" ")[0]
    plot.setTitle(f"Scaling: {model} throughput by node count (dashed: ideal; labels: efficiency)",
                  color=theme.plot_foreground(pal), size="9pt")
    plot.getAxis("bottom").setTicks([[(n, str(n)) for n in sorted({r["nodes"] for r in rows})]])
    plot.enableAutoRange(enable=False)  # from 0: a shortfall against ideal is not exaggerated
    plot.setXRange(0.5, most + 0.5, padding=0)
    plot.setYRange(0, nice_ceiling(top * 1.1), padding=0)
    return curves
