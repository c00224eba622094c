"""The live latency chart of an inference sweep: one series per compiled artefact (batch size x length).

Each (batch size, sequence length) gets its colour: p50 solid, p99 dashed.  The title names the
series in their colours (a legend box would sit on the data) and marks with ✗, in the error colour,
an artefact whose compiled model disagrees with the eager one.  Redrawn from the run's latency ring:
one ``setData`` per curve, and only for a run that changed (the view's timer calls ``update``).
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.models.sweep import Key, Sweep, SweepRow
from app.ui.widgets.charts import live_curve, nice_ceiling, set_range, set_title

TITLE = "Latency (ms), p50 solid, p99 dashed"
LEGEND_MAX = 6  # series named in the title; past that "+N more" (the Sweep tab lists them all)


class LatencyChart:
    def __init__(self, plot: pg.PlotItem, pal: QPalette) -> None:
        self.plot, self.pal = plot, pal
        self.curves: dict[Key, tuple[pg.PlotDataItem, pg.PlotDataItem]] = {}
        self._drawn: dict[Key, tuple[int, float]] = {}  # per series: its windows and the last one's time
        self._title_for: tuple = ()
        set_title(plot, TITLE, pal)

    def _pens(self, index: int) -> tuple[pg.QtGui.QPen, pg.QtGui.QPen]:
        colour = theme.series_colour(index, self.pal)
        return pg.mkPen(colour, width=1), pg.mkPen(colour, width=1, style=Qt.PenStyle.DashLine)

    def _curves(self, key: Key) -> tuple[pg.PlotDataItem, pg.PlotDataItem]:
        if key not in self.curves:
            p50 = live_curve(self.plot, theme.series_colour(len(self.curves), self.pal))
            p99 = live_curve(self.plot, theme.series_colour(len(self.curves), self.pal))
            p99.setPen(self._pens(len(self.curves))[1])
            self.curves[key] = (p50, p99)
        return self.curves[key]

    def update(self, latency: np.ndarray, sweep: Sweep) -> None:
        """Draw every artefact's windows (``latency``: t, batch, p50, p90, p99, length or 0)."""
        for row in sweep.rows.values():
            p50, p99 = self._curves(row.key)
            mask = (latency[:, 1] == row.batch_size) & (latency[:, 5] == (row.seq_len or 0))
            times = latency[mask, 0]
            drawn = (len(times), float(times[-1]) if len(times) else 0.0)
            if self._drawn.get(row.key) == drawn:
                continue  # a sweep's finished artefacts do not change: only the one measuring is redrawn
            self._drawn[row.key] = drawn
            p50.setData(times, latency[mask, 2])
            p99.setData(times, latency[mask, 4])
        set_range(self.plot, "y", nice_ceiling(float(np.nanmax(latency[:, 4], initial=0.0)) * 1.1))
        self._title(list(sweep.rows.values()))

    def _title(self, rows: list[SweepRow]) -> None:
        wrong = [bool(row.problem) for row in rows]
        key = (tuple(row.key for row in rows), tuple(wrong), self.pal.color(QPalette.ColorRole.Text).name())
        if key == self._title_for:
            return
        self._title_for = key
        error = theme.error_text_colour(self.pal).name()
        words = []
        for index, row in enumerate(rows[:LEGEND_MAX]):
            word = f'<span style="color:{theme.series_colour(index, self.pal).name()}">{row.short_label}</span>'
            if wrong[index]:
                word += f'<span style="color:{error}"> ✗ wrong</span>'
            words.append(word)
        more = len(rows) - LEGEND_MAX
        if more > 0:
            bad = sum(wrong[LEGEND_MAX:])
            words.append(f"+{more} more" + (f'<span style="color:{error}"> ({bad} ✗)</span>' if bad else ""))
        set_title(self.plot, TITLE + (": " + " ".join(words) if words else ""), self.pal)

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        for index, (p50, p99) in enumerate(self.curves.values()):
            solid, dashed = self._pens(index)
            p50.setPen(solid)
            p99.setPen(dashed)
        self._title_for = ()

    def data(self) -> dict[str, np.ndarray]:
        """``p50 b4·s16`` and ``p99 b4·s16`` per series: what each curve holds (tests, screenshots)."""
        out = {}
        for (batch, seq), (p50, p99) in self.curves.items():
            label = SweepRow(batch, seq).short_label
            for name, curve in (("p50", p50), ("p99", p99)):
                _x, y = curve.getOriginalDataset()
                out[f"{name} {label}"] = np.asarray(y if y is not None else [], dtype=float)
        return out
