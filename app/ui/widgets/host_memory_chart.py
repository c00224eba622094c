"""A CPU host's memory as one figure: GiB in use over the run, against the host's total.

On a host without NeuronCores or GPUs the "device" is the host itself, so a
per-device memory chart drew one bar as tall as the machine's RAM that said
nothing.  This draws what a user sizing a batch wants instead: how much of the
host's memory the run holds and whether it keeps growing, the total as a dashed
line on top, the latest figure in the title.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from app.ui import theme
from app.ui.models.run_state import GIB, HostNow, missing_reason
from app.ui.widgets.charts import live_curve, new_plot, nice_ceiling, set_curve, set_range, set_title

TITLE = "Host memory (GiB)"


class HostMemoryChart:
    """Host memory used (GiB) over time, with the total; fed the host series of a ``LiveRunState``."""

    def __init__(self, pal: QPalette) -> None:
        self.pal = pal
        self.plot = new_plot(TITLE, "GiB", pal)
        self.used_curve = live_curve(self.plot, theme.series_colour(1, pal))
        self.total_line = pg.InfiniteLine(angle=0, movable=False, pen=self._total_pen(pal))
        self.total_line.setVisible(False)
        self.plot.addItem(self.total_line)
        set_range(self.plot, "y", 1.0)
        self._drawn_samples = -1

    @staticmethod
    def _total_pen(pal: QPalette):
        return pg.mkPen(theme.plot_foreground(pal), width=1, style=Qt.PenStyle.DashLine)

    def update(self, host_series: np.ndarray, now: HostNow | None, samples_seen: int,
               missing: dict[str, str]) -> None:
        """``host_series`` rows are (t, cpu %, memory %, memory GiB), as ``LiveRunState.host_series`` holds them.

        Only a new sample changes it: between samples nothing is redrawn.
        """
        if samples_seen == self._drawn_samples:
            return
        self._drawn_samples = samples_seen
        set_curve(self.used_curve, host_series[:, 0], host_series[:, 3])
        used = None if now is None or now.mem_used is None else now.mem_used / GIB
        total = None if now is None or not now.mem_total else now.mem_total / GIB
        if not samples_seen:
            title = f"{TITLE} · no telemetry yet"
        elif used is None:
            title = f"{TITLE} · N/A: " + missing_reason(missing, "host.mem_used", "not reported by this host")
        elif total is None:
            title = f"Host memory: {used:.1f} GiB used (total N/A)"
        else:
            title = f"Host memory: {used:.1f} of {total:.1f} GiB used ({100.0 * used / total:.0f} %)"
        set_title(self.plot, title, self.pal)
        self.total_line.setVisible(total is not None)
        if total is not None:
            self.total_line.setValue(total)
        peak = float(np.nanmax(host_series[:, 3], initial=0.0)) if len(host_series) else 0.0
        set_range(self.plot, "y", nice_ceiling(max(total or 0.0, peak, 1e-3) * 1.08))

    def restyle(self, pal: QPalette) -> None:
        self.pal = pal
        self.total_line.setPen(self._total_pen(pal))
        self._drawn_samples = -1
