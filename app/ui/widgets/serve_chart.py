"""The live charts of a serve run: TTFT/TPOT percentiles per load level, and throughput against latency.

Fed by the run's ``serve_level`` events (one per level, as each ends: remote_agent/workloads/serve.py).  The
left chart puts the levels in the order they ran (closed-loop concurrency levels, then the SLO's Poisson rates),
p50 solid and p99 dashed; the right chart is the curve a user reads the knee from: output tok/s across, p99 TTFT
up, one point per level, with the SLO's TTFT limit as a line when there is one.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.widgets.charts import nice_ceiling, set_range, set_title

LEVELS_TITLE = "Per load level: {0}TTFT{end} and {1}TPOT{end} (ms), p50 solid, p99 dashed"
CURVE_TITLE = "{0}p99 TTFT{end} (ms) by output tok/s (look for the knee)"


def _keyed(title: str, pal: QPalette) -> str:
    colours = [f'<span style="color:{theme.series_colour(i, pal).name()}">' for i in range(2)]
    return title.format(*colours, end="</span>")


def _stat(level: dict[str, Any], metric: str, stat: str) -> float:
    value = (level.get(metric) or {}).get(stat)
    return float("nan") if value is None else float(value)


def level_label(level: dict[str, Any]) -> str:
    return f"{level['rate']:.3g}/s" if level.get("rate") is not None else f"c={level.get('concurrency')}"


class ServeCharts:
    """Percentiles per level on ``levels``; the throughput-latency curve on ``curve``."""

    def __init__(self, levels: pg.PlotItem, curve: pg.PlotItem, pal: QPalette, slo: dict[str, float] | None) -> None:
        self.levels_plot, self.curve_plot, self.pal, self.slo = levels, curve, pal, slo or {}
        self.lines: dict[str, pg.PlotDataItem] = {}
        for metric in ("ttft", "tpot"):
            for stat in ("p50", "p99"):
                self.lines[f"{metric}_{stat}"] = levels.plot([], [], symbol="o", symbolSize=6)
        self.knee = curve.plot([], [], symbol="o", symbolSize=7)
        self.limit = pg.InfiniteLine(angle=0, movable=False)
        if "ttft_p99" in self.slo:
            self.limit.setValue(self.slo["ttft_p99"])
            curve.addItem(self.limit)
        levels.getAxis("bottom").setLabel("load level, in the order run")
        curve.getAxis("bottom").setLabel("output tok/s")
        self._drawn = -1
        self.restyle(pal)

    def update(self, levels: list[dict[str, Any]]) -> None:
        if len(levels) == self._drawn:
            return
        self._drawn = len(levels)
        x = np.arange(1, len(levels) + 1, dtype=float)
        top = 0.0
        for key, line in self.lines.items():
            metric, stat = key.split("_")
            y = np.array([_stat(lv, metric + "_ms", stat) for lv in levels], dtype=float)
            line.setData(x, y)
            top = max(top, float(np.nanmax(y, initial=0.0)) if len(y) else 0.0)
        self.levels_plot.getAxis("bottom").setTicks([[(i + 1.0, level_label(lv)) for i, lv in enumerate(levels)]])
        set_range(self.levels_plot, "x", len(levels) + 0.5, 0.5)
        set_range(self.levels_plot, "y", nice_ceiling(top * 1.15 or 1.0))
        rate = np.array([lv.get("output_tok_s") or np.nan for lv in levels], dtype=float)
        ttft = np.array([_stat(lv, "ttft_ms", "p99") for lv in levels], dtype=float)
        order = np.argsort(np.nan_to_num(rate))
        self.knee.setData(rate[order], ttft[order])
        set_range(self.curve_plot, "x", nice_ceiling(float(np.nanmax(rate, initial=0.0)) * 1.1 or 1.0))
        ceiling = max(float(np.nanmax(ttft, initial=0.0)), self.slo.get("ttft_p99", 0.0))
        set_range(self.curve_plot, "y", nice_ceiling(ceiling * 1.15 or 1.0))

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        for key, line in self.lines.items():
            colour = theme.series_colour(0 if key.startswith("ttft") else 1, pal)
            style = Qt.PenStyle.SolidLine if key.endswith("p50") else Qt.PenStyle.DashLine
            line.setPen(pg.mkPen(colour, width=2, style=style))
            line.setSymbolBrush(colour)
            line.setSymbolPen(None)
        colour = theme.series_colour(0, pal)
        self.knee.setPen(pg.mkPen(colour, width=2))
        self.knee.setSymbolBrush(colour)
        self.knee.setSymbolPen(None)
        self.limit.setPen(pg.mkPen(theme.series_colour(5, pal), width=1, style=Qt.PenStyle.DashLine))
        set_title(self.levels_plot, _keyed(LEVELS_TITLE, pal), pal)
        slo = f" · SLO {self.slo['ttft_p99']:g} ms dashed" if "ttft_p99" in self.slo else ""
        set_title(self.curve_plot, _keyed(CURVE_TITLE, pal) + slo, pal)
        self._drawn = -1

    def data(self) -> dict[str, np.ndarray]:
        """What each series holds (tests, screenshots)."""
        out = {}
        for key, line in [*self.lines.items(), ("knee", self.knee)]:
            _x, y = line.getOriginalDataset()
            out[key] = np.asarray(y if y is not None else [], dtype=float)
        return out
