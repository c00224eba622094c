"""The phase band: setup / compile / warm-up / measure as coloured regions on the run's time axis."""
from __future__ import annotations

from collections.abc import Sequence

import pyqtgraph as pg
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.models.run_state import PhaseSpan
from app.ui.widgets.charts import LEFT_AXIS_WIDTH

LABEL_MIN_SHARE = 0.07  # a span narrower than this share of the axis is drawn without its name
LABELS = {"setup": "setup", "compile": "compile", "warmup": "warm-up", "measure": "measure"}


class PhaseBand:
    """A thin plot whose x axis is linked to the time charts.

    Regions are rebuilt only when a span opens or closes; an open span just
    grows, and names are shown only where they fit.
    """

    def __init__(self, plot: pg.PlotItem, pal: QPalette) -> None:
        self.plot = plot
        self.pal = pal
        # An empty left axis as wide as the charts' keeps the band's time axis over theirs.
        left = plot.getAxis("left")
        left.setWidth(LEFT_AXIS_WIDTH)
        left.setStyle(showValues=False, tickLength=0)
        left.setPen(pg.mkPen(None))
        plot.hideAxis("bottom")
        plot.setYRange(0, 1, padding=0)
        plot.setMouseEnabled(x=False, y=False)
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.setMaximumHeight(24)
        self._regions: list[tuple[PhaseSpan, pg.LinearRegionItem, pg.TextItem]] = []
        self._drawn: tuple = ()

    def update(self, spans: Sequence[PhaseSpan], now: float, axis_span: float) -> None:
        """Draw ``spans`` (an open one runs to ``now``) on an axis ``axis_span`` seconds wide."""
        key = tuple((s.name, s.start, s.end, s.batch_size) for s in spans)
        if key != self._drawn:
            self._rebuild(spans)
            self._drawn = key
        for span, region, text in self._regions:
            end = span.end if span.end is not None else max(now, span.start)
            if span.end is None:
                region.setRegion((span.start, end))
            text.setVisible(end - span.start >= LABEL_MIN_SHARE * max(axis_span, 1e-9))

    def _rebuild(self, spans: Sequence[PhaseSpan]) -> None:
        for _span, region, text in self._regions:
            self.plot.removeItem(region)
            self.plot.removeItem(text)
        self._regions = []
        for span in spans:
            end = span.end if span.end is not None else span.start
            region = pg.LinearRegionItem((span.start, end), movable=False,
                                         brush=theme.phase_colour(span.name, 90, self.pal), pen=pg.mkPen(None))
            label = LABELS.get(span.name, span.name) + (f" {span.batch_size}" if span.batch_size is not None else "")
            text = pg.TextItem(label, color=theme.plot_foreground(self.pal), anchor=(0, 0.5))
            text.setPos(span.start, 0.5)
            self.plot.addItem(region)
            self.plot.addItem(text)
            self._regions.append((span, region, text))

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self._drawn = ()
