"""pyqtgraph plots styled from the palette, and curves set up for live data (STYLE.md habit 6)."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QGraphicsItem

from app.ui import theme

TITLE_SIZE = "9pt"
TITLE_MAX_CHARS = 60  # what fits over a chart in a run's narrow (side-by-side) view
LEFT_AXIS_WIDTH = 56  # the same for every plot, so that stacked time axes line up


def style_layout(widget: pg.GraphicsLayoutWidget, pal: QPalette) -> None:
    widget.setBackground(theme.plot_background(pal))


def style_plot(plot: pg.PlotItem, pal: QPalette) -> None:
    """Axes and text in the palette's text colour; a faint grid."""
    fg = theme.plot_foreground(pal)
    for name in ("left", "bottom", "right", "top"):
        axis = plot.getAxis(name)
        axis.setPen(pg.mkPen(fg))
        axis.setTextPen(pg.mkPen(fg))
    plot.showGrid(x=True, y=True, alpha=0.15)
    title = getattr(plot, "_nb_title", None)
    if title is not None:
        plot.setTitle(title, color=fg, size=TITLE_SIZE)


def cache_axes(plot: pg.PlotItem) -> None:
    """Paint each axis from a pixmap cache: re-rendered when its range changes, blitted otherwise.

    Without this every repaint of a live chart replays every axis' tick text, which costs more
    than drawing the curves themselves (measured with bench/ui_lag.py).
    """
    for name in ("left", "bottom", "right", "top"):
        plot.getAxis(name).setCacheMode(QGraphicsItem.CacheMode.DeviceCoordinateCache)


def set_title(plot: pg.PlotItem, text: str, pal: QPalette) -> None:
    """Set a plot's title once (unchanged titles are not re-laid out: that costs on every redraw).

    A title's width is a minimum width for its plot in pyqtgraph, so a long one (a host's N/A
    reason can be any length) is cut to TITLE_MAX_CHARS, whole on its tooltip.
    """
    if getattr(plot, "_nb_title", None) == text:
        return
    plot._nb_title = text  # type: ignore[attr-defined]
    shown = text if "<" in text or len(text) <= TITLE_MAX_CHARS else text[: TITLE_MAX_CHARS - 1] + "…"
    plot.setTitle(shown, color=theme.plot_foreground(pal), size=TITLE_SIZE)
    plot.titleLabel.setToolTip(text if shown != text else "")


def new_plot(title: str, y_label: str, pal: QPalette, units: str | None = None) -> pg.PlotItem:
    """A plot (placed in a layout by its view); ``units`` (e.g. "s") lets the axis pick a prefix (ms, µs)."""
    plot = pg.PlotItem()
    plot.setMenuEnabled(False)
    plot.hideButtons()
    plot.setLabel("left", y_label, units=units)
    if units is None:
        plot.getAxis("left").enableAutoSIPrefix(False)
    plot.getAxis("bottom").enableAutoSIPrefix(False)
    plot.disableAutoRange()  # live charts set their ranges (in steps): no autorange pass on every setData
    cache_axes(plot)
    plot.getAxis("left").setWidth(LEFT_AXIS_WIDTH)
    set_title(plot, title, pal)
    style_plot(plot, pal)
    plot.setMouseEnabled(x=False, y=False)  # live charts follow the data; zoom comes with the history view
    return plot


def live_curve(plot: pg.PlotItem, colour: QColor, name: str | None = None, symbol: str | None = None,
               symbol_size: int = 5) -> pg.PlotDataItem:
    """A curve for ring-buffer data: clipped to the view and downsampled, so long runs draw fast.

    The pen is one pixel wide: Qt's raster engine strokes wider lines as polygons, which made a
    10-minute curve cost 3x more to paint (bench/ui_lag.py).  NaN in the data breaks the line
    (``connect="finite"``): a gap between batch sizes, or a missing metric, is drawn as a gap.
    """
    kwargs = {"pen": pg.mkPen(colour, width=1) if symbol is None else None, "name": name,
              "connect": "finite", "autoDownsampleFactor": 2.0}
    if symbol is not None:
        kwargs.update(symbol=symbol, symbolSize=symbol_size, symbolBrush=colour, symbolPen=None)
    item = plot.plot(**kwargs)
    item.setClipToView(True)
    item.setDownsampling(auto=True, method="peak")
    return item


def nice_ceiling(value: float) -> float:
    """``value`` rounded up to a multiple of a fifth of its power of ten (37 -> 38, 412 -> 420, 0.0123 -> 0.014).

    Axis ranges move in these steps rather than with every new point, so the axes (whose
    ticks pyqtgraph re-renders on every range change) are redrawn a few times a minute.
    """
    if not np.isfinite(value) or value <= 0:
        return 1.0
    step = 10.0 ** np.floor(np.log10(value)) / 5.0
    return float(np.ceil(value / step * (1 - 1e-12)) * step)


def set_range(plot: pg.PlotItem, axis: str, top: float, bottom: float = 0.0) -> None:
    """Set an axis range only when it changed (an unchanged range must not cost a relayout)."""
    key = f"_nb_{axis}range"
    if getattr(plot, key, None) == (bottom, top):
        return
    setattr(plot, key, (bottom, top))
    if axis == "x":
        plot.setXRange(bottom, top, padding=0)
    else:
        plot.setYRange(bottom, top, padding=0)


def set_curve(item: pg.PlotDataItem, x: np.ndarray, y: np.ndarray) -> None:
    """One setData per curve per redraw."""
    item.setData(x, y)


def restyle(layout: pg.GraphicsLayoutWidget, plots, pal: QPalette) -> None:
    """Re-colour a chart layout and its plots after the palette changed (light/dark switch)."""
    style_layout(layout, pal)
    for plot in plots:
        style_plot(plot, pal)
