"""Per-core charts in neuron-top's spirit: utilisation bars now, a heat strip over time, memory per core.

Memory is shown per NeuronCore/GPU, never only summed: a summed figure misled a
trn1-vs-g5 comparison (aws-neuron-sdk #744).  A metric the host could not read
is drawn as "N/A", never as a zero bar (STYLE.md habit 7).

On a CPU-only host the cores are the vCPUs.  Up to ``MAX_CORE_BARS`` of them get
one bar each; beyond that (a 192-vCPU host) bars would be slivers nobody can
read, so the "now" chart becomes a histogram: how many vCPUs are 0-10 %, ...,
90-100 % busy.  That is the question a performance engineer asks of a big host
(are the 96 threads torch started all busy, or is the data loader starving
them?), and the heat strip beside it keeps every vCPU's identity over time.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.models.heat_rows import pool_rows, rows_per_pixel_row
from app.ui.models.ring import Ring
from app.ui.models.run_state import DeviceNow, missing_reason
from app.ui.widgets.charts import nice_ceiling, set_range, set_title

GIB = 1024 ** 3
MAX_BAR_LABELS = 16  # more cores than this: the bars speak for themselves
MAX_CORE_BARS = 32   # more cores than this: a histogram of how busy they are
MAX_AXIS_TICKS = 16
MAX_HEAT_TICKS = 6  # the heat strip is short when views stand side by side
BANDS = np.linspace(0.0, 100.0, 11)  # the histogram's 10 %-wide bands
KIND_NAMES = {"neuroncore": "NeuronCore", "gpu": "GPU", "cpu": "CPU", "vcpu": "vCPU"}
BARS_TOP = 118.0  # % axis: room above a 100 % bar for its value label
FALLBACK_ROWS_PX = 128  # a heat strip not laid out yet (offscreen, before the first show)


def device_label(kind: str) -> str:
    return KIND_NAMES.get(kind, "device")


def index_ticks(count: int, offset: float = 0.0) -> list[tuple[float, str]]:
    """Whole-number ticks naming cores by index, at most MAX_AXIS_TICKS of them."""
    every = max(1, -(-count // MAX_AXIS_TICKS))
    return [(i + offset, str(i)) for i in range(0, count, every)]


def core_axis(plot: pg.PlotItem, label: str = "core") -> None:
    """A bottom axis that names cores by index (no "x0.001" scale prefix, whole numbers only)."""
    axis = plot.getAxis("bottom")
    axis.setLabel(label)
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

    def set(self, heights: Sequence[float | None], texts: Sequence[str], x: np.ndarray | None = None,
            width: float = 0.7) -> None:
        x = np.arange(len(heights), dtype=float) if x is None else np.asarray(x, dtype=float)
        values = np.array([np.nan if h is None else h for h in heights], dtype=float)
        shown = ~np.isnan(values)
        self.bars.setOpts(x=x[shown], height=values[shown], width=width)
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
                label.setPos(x[i], 0 if np.isnan(values[i]) else values[i])

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self.bars.setOpts(brush=theme.series_colour(self.colour_index, pal))
        for label in self.labels:
            label.setColor(theme.plot_foreground(pal))


class UtilisationCharts:
    """Each core's utilisation now (bars, or a histogram of many vCPUs), and a heat strip of it over time."""

    def __init__(self, bars_plot: pg.PlotItem, heat_plot: pg.PlotItem, pal: QPalette) -> None:
        self.bars_plot, self.heat_plot, self.pal = bars_plot, heat_plot, pal
        bars_plot.setYRange(0, BARS_TOP, padding=0)
        core_axis(bars_plot)
        self.bars = _Bars(bars_plot, pal, 0)
        self.histogram = False  # the "now" chart counts vCPUs per utilisation band (too many for bars)
        self._axis_key: tuple = ()
        heat_plot.getAxis("left").setLabel("core")
        heat_plot.getAxis("left").setTicks([[]])
        heat_plot.setYRange(0, 1, padding=0)
        self.heat = pg.ImageItem(axisOrder="col-major")
        self.heat.setColorMap(pg.colormap.get("viridis"))
        self.heat.setLevels((0, 100))
        heat_plot.addItem(self.heat)
        # The strip's colour scale: which colour is idle and which is busy (0-100 % of each core).
        self.colour_bar = pg.ColorBarItem(values=(0, 100), width=10, colorMap=pg.colormap.get("viridis"),
                                          interactive=False, colorMapMenu=False)
        self.colour_bar.setImageItem(self.heat, insert_in=heat_plot)
        self.colour_bar.axis.setLabel("% busy")
        self._style_colour_bar(pal)
        self.per_row = 1  # cores merged into one drawn row of the heat strip (by their maximum)
        self._heat_ring: Ring | None = None
        self._heat_key: tuple = ()
        self._heat_rows = 0
        self._kind = "Core"
        self._drawn_samples = -1
        heat_plot.vb.sigResized.connect(self._redraw_heat)

    def update(self, devices: Sequence[DeviceNow], heat: Ring | None, samples_seen: int,
               missing: dict[str, str]) -> None:
        """``devices`` are the cores to show: NeuronCores, GPUs, or a CPU host's vCPUs.

        They change only with a sample: between samples (steps arrive far more often) nothing is redrawn.
        """
        if samples_seen == self._drawn_samples and heat is self._heat_ring:
            return
        self._drawn_samples = samples_seen
        kind = device_label(devices[0].kind) if devices else "Core"
        if not samples_seen:
            note = "no telemetry yet"
        elif not devices:
            note = "N/A: " + missing_reason(missing, "devices", "no NeuronCore or GPU reported")
        elif all(d.util_pct is None for d in devices):
            note = "N/A: " + missing_reason(missing, "devices", "not measured on this host")
        elif devices[0].kind == "cpu":  # a CPU host whose agent sent no per-vCPU figures: its total alone
            note = "all vCPUs · per vCPU N/A: " + missing_reason(missing, "host.cpu_per_core_pct",
                                                                  "this agent does not report them")
        else:
            note = ""
        self._kind = kind
        utils = [d.util_pct for d in devices]
        if len(devices) > MAX_CORE_BARS:
            self._histogram(utils, note)
        else:
            self._bars(kind, utils, note)
        self._heat_ring = heat
        self._redraw_heat()

    def _axes(self, histogram: bool, count: int, label: str) -> None:
        """Set the "now" chart's axes for bars of ``count`` cores or for the histogram, when that changed."""
        key = (histogram, count, label)
        if key == self._axis_key:
            return
        self._axis_key = key
        self.histogram = histogram
        bottom, left = self.bars_plot.getAxis("bottom"), self.bars_plot.getAxis("left")
        if histogram:
            bottom.setLabel(f"% busy ({label}s per 10 % band)")
            bottom.setTicks([[(float(b), f"{b:.0f}") for b in BANDS[::2]]])
            left.setLabel(f"{label}s")
            set_range(self.bars_plot, "x", 102.0, -2.0)  # room for the 0 and 100 ticks
        else:
            bottom.setLabel(label)
            bottom.setTicks([index_ticks(count)])
            left.setLabel("%")
            set_range(self.bars_plot, "x", max(count, 1) - 0.4, -0.6)
            set_range(self.bars_plot, "y", BARS_TOP)

    def _bars(self, kind: str, utils: list[float | None], note: str) -> None:
        self._axes(False, len(utils), kind if kind != "Core" else "core")
        set_title(self.bars_plot, f"{kind} utilisation now (%)" + (f" · {note}" if note else ""), self.pal)
        self.bars.set(utils, ["N/A" if u is None else f"{u:.0f}" for u in utils])

    def _histogram(self, utils: list[float | None], note: str) -> None:
        """How many vCPUs are in each 10 % band of utilisation now (one bar per band, its count on it)."""
        self._axes(True, len(utils), "vCPU")
        read = np.array([u for u in utils if u is not None], dtype=float)
        counts, _edges = np.histogram(np.clip(read, 0.0, 100.0), bins=BANDS)
        unread = len(utils) - len(read)
        if len(read) and not note:
            note = f"mean {read.mean():.0f} %, max {read.max():.0f} %" + (f", {unread} N/A" if unread else "")
        set_title(self.bars_plot, f"{len(utils)} vCPUs by utilisation now" + (f" · {note}" if note else ""),
                  self.pal)
        self.bars.set([float(c) for c in counts], [str(c) if c else "" for c in counts],
                      x=(BANDS[:-1] + BANDS[1:]) / 2, width=9.0)
        set_range(self.bars_plot, "y", nice_ceiling(max(float(counts.max(initial=0)), 1.0) * 1.15))

    def _redraw_heat(self, *_args) -> None:
        """Draw the heat strip from its ring, merging rows when the plot is too short for one row per core."""
        heat = self._heat_ring
        if heat is None or not len(heat):
            set_title(self.heat_plot, f"{self._kind} utilisation over time", self.pal)
            set_range(self.heat_plot, "y", 1.0)
            return
        cores = heat.width - 1
        height = self.heat_plot.vb.height()
        per_row = rows_per_pixel_row(cores, height if height > 1 else FALLBACK_ROWS_PX)
        key = (heat.appended, per_row, cores)
        if key == self._heat_key:
            return
        self._heat_key, self.per_row = key, per_row
        merged = f" · {per_row} {self._kind}s a row, the busiest" if per_row > 1 else ""
        set_title(self.heat_plot, f"{self._kind} utilisation over time" + merged, self.pal)
        data = heat.array()
        t, util = data[:, 0], pool_rows(data[:, 1:], per_row)
        # NaN (not measured) is drawn as the colour map's floor, and stays N/A in the bars and figures.
        self.heat.setImage(np.nan_to_num(util, nan=0.0), autoLevels=False, levels=(0, 100))
        span = max(t[-1] - t[0], 1e-3)
        step = span / max(len(t) - 1, 1)
        # Row r covers cores r*per_row ... (r+1)*per_row - 1: the axis keeps naming cores, not rows.
        self.heat.setRect(QRectF(t[0] - step / 2, 0, span + step, util.shape[1] * per_row))
        if cores != self._heat_rows:
            self._heat_rows = cores
            set_range(self.heat_plot, "y", float(cores))
            self.heat_plot.getAxis("left").setLabel(self._kind if self._kind != "Core" else "core")
            # Core i is the row from i to i+1: name it in the middle of its row.
            ticks = index_ticks(cores, 0.5)
            self.heat_plot.getAxis("left").setTicks([ticks[::-(-len(ticks) // MAX_HEAT_TICKS)]])

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self.bars.restyle(pal)
        self._style_colour_bar(pal)
        self._drawn_samples = -1

    def _style_colour_bar(self, pal: QPalette) -> None:
        axis = self.colour_bar.axis
        colour = theme.plot_foreground(pal)
        axis.setPen(colour)
        axis.setTextPen(colour)
        axis.setTicks([[(0, "0"), (50, "50"), (100, "100")]])


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
