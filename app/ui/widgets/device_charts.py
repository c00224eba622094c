"""Per-core charts in neuron-top's spirit: utilisation bars now, a heat strip over time, memory per core.

Memory is shown per NeuronCore/GPU, never only summed: a summed figure misled a
trn1-vs-g5 comparison (aws-neuron-sdk #744).  A metric the host could not read
is drawn as "N/A", never as a zero bar (STYLE.md habit 7).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.models.ring import Ring
from app.ui.models.run_state import DeviceNow, missing_reason
from app.ui.widgets.charts import nice_ceiling, set_range, set_title

GIB = 1024 ** 3
MAX_BAR_LABELS = 16  # more cores than this: the bars speak for themselves
KIND_NAMES = {"neuroncore": "NeuronCore", "gpu": "GPU", "cpu": "CPU"}


def device_label(kind: str) -> str:
    return KIND_NAMES.get(kind, "device")


def core_axis(plot: pg.PlotItem) -> None:
    """A bottom axis that names cores by index (no "x0.001" scale prefix, whole numbers only)."""
    axis = plot.getAxis("bottom")
    axis.setLabel("core")
    axis.enableAutoSIPrefix(False)
    axis.setTickSpacing(major=1, minor=1)
    plot.setXRange(-0.6, 0.6, padding=0)


class _Bars:
    """A BarGraphItem plus one value label per bar, reused between redraws."""

    def __init__(self, plot: pg.PlotItem, pal: QPalette, colour_index: int) -> None:
        self.plot = plot
        self.pal = pal
        self.colour_index = colour_index
        self.bars = pg.BarGraphItem(x=[], height=[], width=0.7, brush=theme.series_colour(colour_index, pal),
                                    pen=pg.mkPen(None))
        plot.addItem(self.bars)
        self.labels: list[pg.TextItem] = []

    def set(self, heights: Sequence[float | None], texts: Sequence[str]) -> None:
        x = np.arange(len(heights), dtype=float)
        values = np.array([np.nan if h is None else h for h in heights], dtype=float)
        shown = ~np.isnan(values)
        self.bars.setOpts(x=x[shown], height=values[shown], width=0.7)
        labelled = len(heights) <= MAX_BAR_LABELS
        while len(self.labels) < (len(heights) if labelled else 0):
            label = pg.TextItem("", color=theme.plot_foreground(self.pal), anchor=(0.5, 1.0))
            self.plot.addItem(label)
            self.labels.append(label)
        for i, label in enumerate(self.labels):
            visible = labelled and i < len(heights)
            label.setVisible(visible)
            if visible:
                label.setText(texts[i])
                label.setPos(i, 0 if np.isnan(values[i]) else values[i])

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self.bars.setOpts(brush=theme.series_colour(self.colour_index, pal))
        for label in self.labels:
            label.setColor(theme.plot_foreground(pal))


class UtilisationCharts:
    """Bars of each core's utilisation now, and a heat strip of it over the run's time."""

    def __init__(self, bars_plot: pg.PlotItem, heat_plot: pg.PlotItem, pal: QPalette) -> None:
        self.bars_plot, self.heat_plot, self.pal = bars_plot, heat_plot, pal
        bars_plot.setYRange(0, 110, padding=0)
        core_axis(bars_plot)
        self.bars = _Bars(bars_plot, pal, 0)
        heat_plot.getAxis("left").setLabel("core")
        heat_plot.getAxis("left").setTicks([[]])
        heat_plot.setYRange(0, 1, padding=0)
        self.heat = pg.ImageItem(axisOrder="col-major")
        self.heat.setColorMap(pg.colormap.get("viridis"))
        self.heat.setLevels((0, 100))
        heat_plot.addItem(self.heat)
        self._heat_seen = -1
        self._heat_rows = 0

    def update(self, devices: Sequence[DeviceNow], heat: Ring | None, samples_seen: int,
               missing: dict[str, str]) -> None:
        kind = device_label(devices[0].kind) if devices else "Core"
        if not samples_seen:
            note = "no telemetry yet"
        elif not devices:
            note = "N/A: " + missing_reason(missing, "devices", "no NeuronCore or GPU reported")
        elif all(d.util_pct is None for d in devices):
            note = "N/A: " + missing_reason(missing, "devices", "not measured on this host")
        else:
            note = ""
        set_title(self.bars_plot, f"{kind} utilisation now (%)" + (f" · {note}" if note else ""), self.pal)
        set_title(self.heat_plot, f"{kind} utilisation over time", self.pal)
        self.bars.set([d.util_pct for d in devices],
                      ["N/A" if d.util_pct is None else f"{d.util_pct:.0f}" for d in devices])
        set_range(self.bars_plot, "x", max(len(devices), 1) - 0.4, -0.6)
        if heat is None or not len(heat):
            set_range(self.heat_plot, "y", 1.0)
            return
        if heat.appended == self._heat_seen:
            return
        self._heat_seen = heat.appended
        data = heat.array()
        t, util = data[:, 0], data[:, 1:]
        # NaN (not measured) is drawn as the colour map's floor, and stays N/A in the bars and figures.
        self.heat.setImage(np.nan_to_num(util, nan=0.0), autoLevels=False, levels=(0, 100))
        span = max(t[-1] - t[0], 1e-3)
        step = span / max(len(t) - 1, 1)
        self.heat.setRect(QRectF(t[0] - step / 2, 0, span + step, util.shape[1]))
        if util.shape[1] != self._heat_rows:
            self._heat_rows = util.shape[1]
            set_range(self.heat_plot, "y", float(util.shape[1]))
            # Core i is the row from i to i+1: name it in the middle of its row.
            every = max(1, util.shape[1] // 8)
            self.heat_plot.getAxis("left").setTicks([[(i + 0.5, str(i)) for i in range(0, util.shape[1], every)]])

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self.bars.restyle(pal)


class MemoryBars:
    """Device memory in use per core (GiB) against each core's total."""

    def __init__(self, plot: pg.PlotItem, pal: QPalette) -> None:
        self.plot, self.pal = plot, pal
        core_axis(plot)
        self.total = _Bars(plot, pal, 4)
        self.total.bars.setOpacity(0.35)
        self.used = _Bars(plot, pal, 2)

    def update(self, devices: Sequence[DeviceNow], samples_seen: int, missing: dict[str, str]) -> None:
        kind = device_label(devices[0].kind) if devices else "device"
        used = [None if d.mem_used is None else d.mem_used / GIB for d in devices]
        total = [None if d.mem_total is None else d.mem_total / GIB for d in devices]
        if not samples_seen:
            note = " · no telemetry yet"
        elif not devices or all(u is None for u in used):
            note = " · N/A: " + missing_reason(missing, "devices", "not reported by this host")
        else:
            note = ""
        set_title(self.plot, f"Memory per {kind} (GiB, of total)" + note, self.pal)
        self.total.set(total, [""] * len(total))
        self.used.set(used, ["N/A" if u is None else f"{u:.1f}" for u in used])
        top = max([v for v in total + used if v is not None] or [1.0])
        set_range(self.plot, "y", nice_ceiling(top * 1.15))
        set_range(self.plot, "x", max(len(devices), 1) - 0.4, -0.6)

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self.total.restyle(pal)
        self.used.restyle(pal)
