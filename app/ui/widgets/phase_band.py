"""The phase band: setup / compile / warm-up / measure as coloured regions on the run's time axis."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.models.run_state import PhaseSpan
from app.ui.widgets.charts import LEFT_AXIS_WIDTH

LABEL_MIN_SHARE = 0.07  # a span narrower than this share of the axis is drawn without its name
MAX_LABELS = int(1 / LABEL_MIN_SHARE) + 1  # at most this many spans can be wide enough to be named
LABELS = {"setup": "setup", "compile": "compile", "warmup": "warm-up", "measure": "measure"}
# serve: the agent's "compile" phase is the server starting and loading the model (transformers serve, vLLM)
SERVE_LABELS = dict(LABELS, compile="server start/load")


class PhaseBand:
    """A thin plot whose x axis is linked to the time charts.

    All spans are one BarGraphItem (one item to paint however many phases a
    long sweep has), named by a small pool of text items placed on the spans
    wide enough to hold a name.
    """

    def __init__(self, plot: pg.PlotItem, pal: QPalette, labels: dict[str, str] | None = None) -> None:
        self.plot = plot
        self.pal = pal
        self.names = labels or LABELS
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
        self.bars = pg.BarGraphItem(x0=[], width=[], y0=0, height=1, pen=pg.mkPen(None), brushes=[])
        plot.addItem(self.bars)
        self.labels: list[pg.TextItem] = []
        self._drawn: tuple = ()
        self._brushes = theme.phase_brushes(90, pal)

    def update(self, spans: Sequence[PhaseSpan], now: float, axis_span: float) -> None:
        """Draw ``spans`` (an open one runs to ``now``) on an axis ``axis_span`` seconds wide."""
        starts = np.array([s.start for s in spans], dtype=float)
        ends = np.array([s.end if s.end is not None else max(now, s.start) for s in spans], dtype=float)
        # Spans only open at the end and drop off the front; an open one (anywhere) grows with `now`.
        key = (len(spans), float(starts[0]) if len(spans) else None, float(ends.sum()), round(axis_span, 3))
        if key == self._drawn:
            return
        self._drawn = key
        self.bars.setOpts(x0=starts, width=ends - starts, y0=0, height=1,
                          brushes=[self._brushes.get(s.name, self._brushes[""]) for s in spans])
        wide = [(s, start) for s, start, end in zip(spans, starts, ends, strict=True)
                if end - start >= LABEL_MIN_SHARE * max(axis_span, 1e-9)][:MAX_LABELS]
        while len(self.labels) < len(wide):
            label = pg.TextItem("", color=theme.plot_foreground(self.pal), anchor=(0, 0.5))
            self.plot.addItem(label)
            self.labels.append(label)
        for i, label in enumerate(self.labels):
            if i < len(wide):
                span, start = wide[i]
                label.setText(self.names.get(span.name, span.name)
                              + (f" {span.batch_size}" if span.batch_size is not None else "")
                              + (f"·s{span.seq_len}" if span.seq_len is not None else ""))
                label.setPos(start, 0.5)
            label.setVisible(i < len(wide))

    def shown_labels(self) -> list[str]:
        return [label.toPlainText() for label in self.labels if label.isVisible()]

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self._drawn = ()
        self._brushes = theme.phase_brushes(90, pal)
        for label in self.labels:
            label.setColor(theme.plot_foreground(pal))
