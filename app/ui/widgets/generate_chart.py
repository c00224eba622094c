"""The live charts of a generate run: TTFT and TPOT of every call as it comes, and each call's prefill/decode split.

Fed by the run's ``gen_call`` ring (t, TTFT ms, TPOT ms, decode ms, output tok/s, stage): the first call
(which compiles on static-shape stacks) and the warm-up calls are drawn faint, the timed calls in colour.
The split chart stacks each call's prefill (TTFT) under its decode (E2E − TTFT) at the time it ended.
Redrawn from the ring on the view's timer: one ``setData`` per item, only when the ring moved.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.widgets.charts import live_curve, nice_ceiling, set_range, set_title

CALLS_TITLE = "Per call: {0}TTFT{end} and {1}TPOT{end} (ms); first and warm-up calls faint"
SPLIT_TITLE = "Each call: {0}prefill{end} + {1}decode{end} (ms)"
SPLIT_CALLS = 400  # the bars of the latest calls (a tiny model makes thousands a minute)
MEASURE = 2.0  # the ring's stage code of a timed call (0 first, 1 warm-up)


def _keyed(title: str, pal: QPalette) -> str:
    colours = [f'<span style="color:{theme.series_colour(i, pal).name()}">' for i in range(2)]
    return title.format(*colours, end="</span>")


class GenerateCharts:
    """TTFT/TPOT per call on ``calls``; the prefill/decode split on ``split``."""

    def __init__(self, calls: pg.PlotItem, split: pg.PlotItem, pal: QPalette) -> None:
        self.calls, self.split, self.pal = calls, split, pal
        self.ttft = live_curve(calls, theme.series_colour(0, pal), symbol="o", symbol_size=4)
        self.tpot = live_curve(calls, theme.series_colour(1, pal), symbol="o", symbol_size=4)
        faint = theme.plot_foreground(pal)
        faint.setAlpha(90)
        self.early = live_curve(calls, faint, symbol="x", symbol_size=6)
        self.early.setPen(None)
        self.prefill = pg.BarGraphItem(x=[], height=[], width=0.0, y0=0.0, brush=theme.series_colour(0, pal), pen=None)
        self.decode = pg.BarGraphItem(x=[], height=[], width=0.0, y0=0.0, brush=theme.series_colour(1, pal), pen=None)
        split.addItem(self.prefill)
        split.addItem(self.decode)
        self._drawn = (-1, 0.0)
        self.restyle(pal)

    def update(self, calls: np.ndarray, span_s: float) -> None:
        """``calls``: t, TTFT ms, TPOT ms, decode ms, output tok/s, stage (0 first, 1 warm-up, 2 measure)."""
        drawn = (len(calls), float(calls[-1, 0]) if len(calls) else 0.0)
        if drawn == self._drawn:
            return
        self._drawn = drawn
        timed = calls[calls[:, 5] == MEASURE]
        early = calls[calls[:, 5] != MEASURE]
        self.ttft.setData(timed[:, 0], timed[:, 1])
        self.tpot.setData(timed[:, 0], timed[:, 2])
        self.early.setData(early[:, 0], early[:, 1])
        # The axis fits the timed calls: a first call that compiled for seconds would flatten them.
        values = np.concatenate([timed[:, 1], timed[:, 2]]) if len(timed) else calls[:, 1]
        set_range(self.calls, "y", nice_ceiling(float(np.nanmax(values, initial=0.0)) * 1.15 or 1.0))
        recent = timed[-SPLIT_CALLS:]
        width = max(span_s / 300.0, 1e-3)
        prefill = np.nan_to_num(recent[:, 1])
        decode = np.nan_to_num(recent[:, 3])
        self.prefill.setOpts(x=recent[:, 0], height=prefill, width=width, y0=np.zeros(len(recent)))
        self.decode.setOpts(x=recent[:, 0], height=decode, width=width, y0=prefill)
        set_range(self.split, "y", nice_ceiling(float(np.nanmax(prefill + decode, initial=0.0)) * 1.1 or 1.0))

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self.ttft.setPen(pg.mkPen(theme.series_colour(0, pal), width=1))
        self.tpot.setPen(pg.mkPen(theme.series_colour(1, pal), width=1))
        self.prefill.setOpts(brush=theme.series_colour(0, pal))
        self.decode.setOpts(brush=theme.series_colour(1, pal))
        set_title(self.calls, _keyed(CALLS_TITLE, pal), pal)
        set_title(self.split, _keyed(SPLIT_TITLE, pal), pal)
        self._drawn = (-1, 0.0)

    def data(self) -> dict[str, np.ndarray]:
        """What each series holds (tests, screenshots)."""
        out = {}
        for name, curve in (("ttft", self.ttft), ("tpot", self.tpot), ("first_and_warmup", self.early)):
            _x, y = curve.getOriginalDataset()
            out[name] = np.asarray(y if y is not None else [], dtype=float)
        out["prefill"] = np.asarray(self.prefill.opts.get("height", []), dtype=float)
        out["decode"] = np.asarray(self.decode.opts.get("height", []), dtype=float)
        return out
