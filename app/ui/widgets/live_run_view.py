"""The live view of one run on one host: progress, phase band, step time or latency, throughput,
per-core utilisation and memory, host CPU and memory, the log, and the result when it ends.

Events are applied to a ``LiveRunState`` as they arrive (appends only); the
charts are redrawn by ``refresh()``, which the runs area calls on one ~10 Hz
timer for every view: one ``setData`` per curve, and nothing at all for a run
that did not change (STYLE.md habit 6).
"""
from __future__ import annotations

import contextlib
import html
from typing import Any

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.cli.text import format_result
from app.core.errors import NeuronBenchError
from app.core.mfu import live_mfu, mfu_text
from app.core.quoting import clean
from app.core.serve_points import slo_limits
from app.core.specs import spec_summary
from app.core.step_window import ROLLING_STEPS
from app.core.target_ci import interval_text
from app.services.ec2.lease import STAGES as LAUNCH_STAGES
from app.services.peaks import load_peak_table
from app.ui import theme
from app.ui.bridge import QUEUED, RunJob
from app.ui.models.result_line import result_line
from app.ui.models.run_state import LiveRunState, missing_reason
from app.ui.widgets.charts import (
    live_curve,
    new_plot,
    nice_ceiling,
    restyle,
    set_curve,
    set_range,
    set_title,
    style_layout,
)
from app.ui.widgets.device_charts import MemoryBars, UtilisationCharts
from app.ui.widgets.error_panel import describe_exception
from app.ui.widgets.generate_chart import GenerateCharts
from app.ui.widgets.host_memory_chart import HostMemoryChart
from app.ui.widgets.latency_chart import LatencyChart
from app.ui.widgets.log_pane import LogPane
from app.ui.widgets.phase_band import PhaseBand
from app.ui.widgets.serve_chart import ServeCharts
from app.ui.widgets.sweep_view import CheckBanner, SweepTable

MIN_X_SPAN_S = 5.0
STEP_TITLE = "Step time (s), rolling median"
THROUGHPUT_TITLE = f"Throughput (samples/s), last {ROLLING_STEPS} steady steps"
# Titles name their curves in the curves' colours (a legend would sit on the data): {0} is series 0...
LATENCY_TITLE = "Latency (ms)"
HOST_TITLE = "Host {0}CPU{end} and {1}memory{end} (%)"


def keyed(title: str, pal) -> str:
    """A title whose {n}...{end} words are coloured like series n (rich text for pyqtgraph's LabelItem)."""
    colours = [f'<span style="color:{theme.series_colour(i, pal).name()}">' for i in range(3)]
    return title.format(*colours, end="</span>")


AXIS_TOP_STEPS = 2_000  # the step-time axis fits the latest steps (a percentile of all would cost O(n) a redraw)


def step_axis_top(steps: np.ndarray) -> float:
    """The step-time axis' top: room for the steady steps (their 98th percentile x 1.6), not for compiles."""
    recent = steps[-AXIS_TOP_STEPS:]
    steady = recent[recent[:, 4] == 0, 1]
    steady = steady[~np.isnan(steady)]
    if len(steady):
        return max(float(np.percentile(steady, 98)) * 1.6, 1e-6)
    return float(np.nanmax(recent[:, 1])) * 1.1 if len(recent) else 1.0


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "ETA --"
    seconds = int(round(seconds))
    return f"ETA {seconds // 60}:{seconds % 60:02d}" if seconds >= 60 else f"ETA {seconds} s"


def _set_text(label: QLabel, text: str) -> None:
    """Relabel only on change: a label that changes size relayouts the whole view."""
    if label.text() != text:
        label.setText(text)


def _num(value: float | None, fmt: str, unit: str = "") -> str:
    return "N/A" if value is None else f"{value:{fmt}}{unit}"


def known_figures(state: LiveRunState) -> list[str]:
    """The interval as it shrinks (``±3.1 % (target ±2 %)``) and the rolling MFU while the run goes (a finished
    run's line is the Result's: app/ui/models/result_line.py)."""
    parts = []
    if state.ci_pct is not None:
        parts.append("95% interval " + interval_text(state.ci_pct, getattr(state.spec, "target_ci", None)))
    mfu = None
    if state.compute.get("flops_per_sample"):
        with contextlib.suppress(NeuronBenchError):
            mfu = live_mfu(state.compute, state.env, state.latest_throughput(), load_peak_table())
    if mfu is not None:
        parts.append(f"MFU <b>{mfu_text(mfu)}</b>")
    return parts


class LiveRunView(QFrame):
    """One host's run.  ``error_raised(title, message, detail)`` feeds the window's error panel."""

    error_raised = Signal(str, str, str)
    finished = Signal(object)  # self

    def __init__(self, job: RunJob, title: str, parent: QWidget | None = None, node: int | None = None) -> None:
        super().__init__(parent)
        self.job = job
        self.title = title
        self.state = LiveRunState(job.host, job.spec, node)
        self._drawn_version = -1
        self.done = False  # the run's thread has reported how it ended (result, failure or detach)
        self._dot_status = ""
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName(f"live-run-{job.host}")
        pal = self.palette()

        # ---- header: who, what, how far
        self.dot = QLabel()
        self.heading = QLabel(f"<b>{html.escape(clean(title))}</b> · {html.escape(clean(spec_summary(job.spec)))}")
        self.heading.setTextFormat(Qt.TextFormat.RichText)
        self.heading.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.heading.setToolTip(clean(f"run {job.run_id} on {job.control.transport.describe()}"))
        self.activity = QLabel()
        self.activity.setTextFormat(Qt.TextFormat.PlainText)  # it quotes the host (a phase's name)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("stop this run on its host")
        self.cancel_button.setAutoDefault(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setFormat("%p%")
        self.eta = QLabel(format_eta(None))
        self.figures = QLabel()
        self.figures.setTextFormat(Qt.TextFormat.RichText)
        self.figures.setWordWrap(True)
        self.check_banner = CheckBanner()  # a compiled model that gives wrong answers, said over the charts

        head = QHBoxLayout()
        head.addWidget(self.dot)
        head.addWidget(self.heading, 1)
        head.addWidget(self.activity)
        head.addWidget(self.cancel_button)
        bar = QHBoxLayout()
        bar.addWidget(self.progress, 1)
        bar.addWidget(self.eta)

        # ---- charts, one GraphicsLayoutWidget (one scene to paint, not seven)
        self.charts = pg.GraphicsLayoutWidget()
        self.charts.setMinimumHeight(330)
        style_layout(self.charts, pal)
        self.charts.ci.setSpacing(4)
        train = job.spec.workload == "train"
        generate = job.spec.workload == "generate"
        serve = job.spec.workload == "serve"
        # One phase band over each column of charts: each lines up with the time axes under it.
        self.bands = [PhaseBand(pg.PlotItem(), pal) for _ in (0, 1)]
        if train:
            self.main = new_plot(STEP_TITLE, "step time", pal, units="s")
            raw = theme.plot_foreground(pal)
            raw.setAlpha(90)  # each step faint (in the text colour), their rolling median in colour
            self.step_curve = live_curve(self.main, raw)
            self.median_curve = live_curve(self.main, theme.series_colour(0, pal))
            self.compiled_curve = live_curve(self.main, theme.series_colour(5, pal), symbol="t1", symbol_size=8)
        elif generate or serve:
            self.main = new_plot("", "ms", pal)
        else:
            self.main = new_plot(LATENCY_TITLE, "ms", pal)
            self.latency_chart = LatencyChart(self.main, pal)  # a series per batch size and sequence length
        self.throughput = new_plot("" if generate or serve else THROUGHPUT_TITLE if train else
                                   "Throughput (samples/s)", "ms" if generate or serve else "samples/s", pal)
        self.throughput_curve = live_curve(self.throughput, theme.series_colour(2, pal))
        # generate: TTFT and TPOT of each call on the main chart, its prefill/decode split on the second
        self.generate_charts = GenerateCharts(self.main, self.throughput, pal) if generate else None
        # serve: TTFT/TPOT percentiles per load level, and throughput against latency (neither over time)
        self.serve_charts = ServeCharts(self.main, self.throughput, pal, _slo(job.spec)) if serve else None
        util_bars = new_plot("Core utilisation now (%)", "%", pal)
        heat = new_plot("Core utilisation over time", "core", pal)
        self.util = UtilisationCharts(util_bars, heat, pal)
        self.memory = MemoryBars(new_plot("Memory per core (GiB)", "GiB", pal), pal)
        # A CPU host's memory is the host's: one figure over time in the memory chart's place.
        self.host_memory = HostMemoryChart(pal)
        self.host_plot = new_plot(HOST_TITLE, "%", pal)
        self.host_plot.setYRange(0, 105, padding=0)
        self.cpu_curve = live_curve(self.host_plot, theme.series_colour(0, pal), name="CPU")
        self.mem_curve = live_curve(self.host_plot, theme.series_colour(1, pal), name="memory")
        self.time_plots = [self.main, self.throughput, heat, self.host_plot, self.host_memory.plot,
                           *(b.plot for b in self.bands)]
        if serve:  # its two charts have their own x axes (load levels, tok/s): time is kept by the others
            self.time_plots = self.time_plots[2:]
        self.time_axis = self.time_plots[0]
        for plot in self.time_plots[1:]:
            plot.setXLink(self.time_axis)
        self.host_plot.getAxis("bottom").setLabel("seconds since the run started")
        self.plots = [self.main, self.throughput, util_bars, heat, self.memory.plot, self.host_memory.plot,
                      self.host_plot]
        self.chart_columns = 0
        self.memory_plot = self.memory.plot  # the one in the grid: device memory, or a CPU host's memory
        self.set_chart_columns(2)

        # ---- log and result
        self.log = LogPane()
        self.result_text = QPlainTextEdit()
        self.result_text.setReadOnly(True)
        self.result_text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.result_text.setPlaceholderText("The result appears here when the run ends.")
        self.tabs = QTabWidget()
        self.tabs.addTab(self.log, "Log")
        self.tabs.addTab(self.result_text, "Result")
        self.sweep_table: SweepTable | None = None
        if not train:  # a row per compiled artefact: latency, samples/s, tokens/s, the check
            self.sweep_table = SweepTable(job.spec.check)
            self.tabs.addTab(self.sweep_table, "Sweep")
        self.tabs.setDocumentMode(True)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.charts)
        split.addWidget(self.tabs)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        split.setChildrenCollapsible(False)
        split.setSizes([700, 170])
        self.tabs.setMinimumHeight(90)

        outer = QVBoxLayout(self)
        outer.setContentsMargins(8, 8, 8, 8)
        outer.addLayout(head)
        outer.addLayout(bar)
        outer.addWidget(self.figures)
        outer.addWidget(self.check_banner)
        outer.addWidget(split, 1)

        self.cancel_button.clicked.connect(self.cancel)
        job.event.connect(self.on_event, QUEUED)
        job.done.connect(self.on_done, QUEUED)
        job.failed.connect(self.on_failed, QUEUED)
        job.detached.connect(self.on_detached, QUEUED)
        job.warning.connect(self.on_warning, QUEUED)
        job.stage.connect(self.on_stage, QUEUED)
        job.notice.connect(self.on_notice, QUEUED)
        job.refused.connect(self.on_refused, QUEUED)
        self.refresh()

    # ------------------------------------------------------------ layout
    def set_chart_columns(self, columns: int, force: bool = False) -> None:
        """Charts two abreast (a run alone), or stacked in one column (runs side by side)."""
        if columns == self.chart_columns and not force:
            return
        self.chart_columns = columns
        layout = self.charts.ci
        placed = [self.bands[0].plot, self.bands[1].plot, *self.plots]
        for item in placed:
            if item in layout.items:
                layout.removeItem(item)
        util_bars, heat = self.util.bars_plot, self.util.heat_plot
        memory = self.memory_plot
        if columns == 2:
            grid = [[self.bands[0].plot, self.bands[1].plot], [self.main, self.throughput], [util_bars, heat],
                    [memory, self.host_plot]]
        else:
            grid = [[self.bands[0].plot], [self.main], [self.throughput], [heat], [self.host_plot], [util_bars],
                    [memory]]
        for row, items in enumerate(grid):
            for col, item in enumerate(items):
                layout.addItem(item, row=row, col=col)
        self.bands[1].plot.setVisible(columns == 2)
        for plot in (self.memory.plot, self.host_memory.plot):
            plot.setVisible(plot is memory)
        # Taking the items out shrank the layout to its minimum size.  A change of columns comes with a
        # resize that gives it the view's size again; a relayout for a CPU host's memory chart does not.
        self.charts.ci.setGeometry(self.charts.range)

    # ------------------------------------------------------------ from the bridge (UI thread)
    @Slot(object)
    def on_event(self, event: dict[str, Any]) -> None:
        self.state.apply(event)

    @Slot(object)
    def on_done(self, result: dict[str, Any]) -> None:
        self.state.take_result(result)  # the priced Result: the status line shows its figures
        self.state.sweep.on_result(result)  # the Result's figures and checks for every row
        if self.state.status not in ("ok", "failed", "cancelled"):
            self.state.mark(str(result.get("status")), str(result.get("status")))
        self.result_text.setPlainText(format_result(result))
        if result.get("status") == "failed":
            error = result.get("error") or {}
            self.error_raised.emit(f"{self.title}: the run failed", str(error.get("message") or "no reason given"),
                                   str(error.get("detail") or ""))
        self._end()

    @Slot(object)
    def on_failed(self, exc: BaseException) -> None:
        message, detail = describe_exception(exc)
        self.state.fail(message, detail, getattr(exc, "kind", type(exc).__name__))
        self.error_raised.emit(f"{self.title}: the run failed", message, detail)
        self._end()

    @Slot(str)
    def on_detached(self, run_id: str) -> None:
        self.state.mark("detached", "still running on the host")
        self._end()

    @Slot(str)
    def on_warning(self, message: str) -> None:
        self.state.note("warning", message)

    @Slot(str)
    def on_notice(self, sentence: str) -> None:
        """The session's own sentences: the connection lost and back, an event of the agent's refused."""
        self.state.note("warning", sentence)

    @Slot(int)
    def on_refused(self, count: int) -> None:
        self.state.refused = count
        self.state.version += 1

    @Slot(str, str)
    def on_stage(self, stage: str, sentence: str) -> None:
        """A launched instance's progress (launching, pending, running, ssh up, deployed, terminated)."""
        if self.state.events_seen == 0 and stage in LAUNCH_STAGES:
            self.state.mark(self.state.status, f"EC2: {stage}")
        self.state.note("warning" if stage in ("gone", "terminate failed") else "info", sentence)

    def note_stored_copy(self, heading: str, sentence: str) -> None:
        """This run sends a stored run's copy of its model file (Run again): said in the heading and the log."""
        self.heading.setText(self.heading.text() + f" · <i>{heading}</i>")
        self.state.note("info", sentence)

    def cancel(self) -> None:
        if not self.done:
            self.job.cancel()
            self.state.mark(self.state.status, "cancelling…")
            self.cancel_button.setEnabled(False)

    def _end(self) -> None:
        self.done = True
        self.cancel_button.setEnabled(False)
        self.refresh()
        self.finished.emit(self)

    # ------------------------------------------------------------ drawing (the timer calls this)
    def refresh(self) -> None:
        state = self.state
        if state.version == self._drawn_version:
            return
        self._drawn_version = state.version
        pal = self.palette()
        status = state.status if state.status != "starting" else "running"
        if status != self._dot_status:
            self._dot_status = status
            self.dot.setPixmap(theme.status_dot(status, pal))
        _set_text(self.activity, state.activity)
        self.progress.setValue(int(round(state.progress.fraction * 1000)))
        _set_text(self.eta, "" if state.finished else format_eta(state.progress.eta_s))
        _set_text(self.figures, self._figures_text())
        self.log.add(state.take_new_logs())
        span = nice_ceiling(max(state.last_t * 1.02, MIN_X_SPAN_S))
        set_range(self.time_axis, "x", span)
        phases = list(state.phases)
        for band in self.bands:
            band.update(phases, state.last_t, span)
        if self.serve_charts is not None:
            self.serve_charts.update(state.serve_levels)
        elif self.generate_charts is not None:
            self.generate_charts.update(state.gen_calls.array(), span)
            if self.sweep_table is not None:
                self.sweep_table.update_from(state.sweep)
        elif state.spec.workload == "train":
            steps = state.steps.array()
            # Compiled steps are the ▲ markers; on the line they would draw a cliff of seconds.
            set_curve(self.step_curve, steps[:, 0], np.where(steps[:, 4] == 0, steps[:, 1], np.nan))
            set_curve(self.median_curve, steps[:, 0], steps[:, 2])
            compiled = state.compiled_steps.array()
            top = nice_ceiling(step_axis_top(steps))
            set_range(self.main, "y", top)
            # A compile takes seconds, a step milliseconds: compiled steps sit on the top edge when off scale.
            set_curve(self.compiled_curve, compiled[:, 0], np.minimum(compiled[:, 1], top * 0.97))
            clipped = bool(len(compiled)) and float(np.nanmax(compiled[:, 1])) > top
            set_title(self.main, STEP_TITLE + (" · ▲ compiled (off scale)" if clipped else
                                               " · ▲ compiled" if len(compiled) else ""), pal)
            set_curve(self.throughput_curve, steps[:, 0], steps[:, 3])
            set_range(self.throughput, "y", nice_ceiling(float(np.nanmax(steps[:, 3], initial=0.0)) * 1.1))
        else:
            self.latency_chart.update(state.latency.array(), state.sweep)
            rate = state.infer_throughput.array()
            set_curve(self.throughput_curve, rate[:, 0], rate[:, 1])
            set_range(self.throughput, "y", nice_ceiling(float(np.nanmax(rate[:, 1], initial=0.0)) * 1.1))
            if self.sweep_table is not None:
                self.sweep_table.update_from(state.sweep)
        self.check_banner.update_from(state.sweep)
        self.util.update(state.cores, state.heat, state.samples_seen, state.missing)
        host = state.host_series.array()
        memory = self.host_memory.plot if state.cpu_host else self.memory.plot
        if memory is not self.memory_plot:  # the first sample said which host this is
            self.memory_plot = memory
            self.set_chart_columns(self.chart_columns, force=True)
        if state.cpu_host:
            self.host_memory.update(host, state.host_now, state.samples_seen, state.missing)
        else:
            self.memory.update(state.devices, state.samples_seen, state.missing)
        set_curve(self.cpu_curve, host[:, 0], host[:, 1])
        set_curve(self.mem_curve, host[:, 0], host[:, 2])
        cpu, mem = state.latest_host()
        if not state.samples_seen:
            note = " · no telemetry yet"
        elif cpu is None and mem is None:
            note = " · N/A: " + missing_reason(state.missing, "host", "not measured")
        else:
            note = ""
        set_title(self.host_plot, keyed(HOST_TITLE, pal) + note, pal)

    def _figures_text(self) -> str:
        if self.state.finished and self.state.result is not None:
            return result_line(self.state.result)  # the Result's figures, not the last rolling window's
        return self.live_text()

    def live_text(self) -> str:
        """The status line while the run goes on: the rolling figures and the host's newest sample."""
        state = self.state
        parts = []
        if state.spec.workload == "serve":
            level = state.serve_levels[-1] if state.serve_levels else None
            if level is None:
                return "no load level finished yet"
            where = f"c={level.get('concurrency')}" if level.get("rate") is None else f"{level['rate']:.3g}/s"
            parts.append(f"{len(state.serve_levels)} level(s); last {where}")
            for label, metric in (("TTFT p99", "ttft_ms"), ("TPOT p99", "tpot_ms")):
                parts.append(f"{label} <b>{_num((level.get(metric) or {}).get('p99'), '.3g', ' ms')}</b>")
            parts.append(f"output <b>{_num(level.get('output_tok_s'), ',.1f', ' tok/s')}</b>")
            rate = level.get("error_rate")  # a failed request is never good: its share shows beside the figures
            if rate is None and level.get("requests"):
                rate = (level.get("errors") or 0) / level["requests"]
            parts.append(f"errors <b>{_num(None if rate is None else 100 * rate, '.3g', '%')}</b>"
                         + (f" ({level['errors']})" if level.get("errors") else ""))
            return " · ".join(parts)
        if state.spec.workload == "generate":
            call = state.gen_calls.last()
            for label, column in (("TTFT", 1), ("TPOT", 2)):
                value = None if call is None or np.isnan(call[column]) else float(call[column])
                parts.append(f"{label} <b>{_num(value, '.2f', ' ms')}</b>")
            parts.append(f"output <b>{_num(state.latest_throughput(), ',.1f', ' tok/s')}</b>")
            parts.extend(known_figures(state))
            return " · ".join(parts)
        if state.spec.workload == "train":
            parts.append(f"step {state.progress.step}/{state.spec.steps}")
            parts.append(f"step time (median of last {ROLLING_STEPS}) "
                         f"<b>{_num(state.latest_step_median(), '.4f', ' s')}</b>")
        else:
            lat = state.latest_latency()
            parts.append(f"p50 <b>{_num(lat[0] if lat else None, '.2f', ' ms')}</b>")
            parts.append(f"p99 <b>{_num(lat[2] if lat else None, '.2f', ' ms')}</b>")
        parts.append(f"throughput <b>{_num(state.latest_throughput(), ',.1f', ' samples/s')}</b>")
        tokens = state.latest_tokens_per_s()  # text models: tokens/s beside samples/s
        if tokens is not None:
            parts[-1] += f" · <b>{tokens:,.0f} tokens/s</b>"
        parts.extend(known_figures(state))
        cpu, mem = state.latest_host()
        parts.append(f"host CPU {_num(cpu, '.0f', '%')}")
        parts.append(f"memory {_num(mem, '.0f', '%')}")
        if state.refused:  # lines of the agent's that protocol v1 refused (the log says why)
            parts.append(f"<b>{state.refused:,}</b> event{'s' if state.refused != 1 else ''} refused")
        return " · ".join(parts)

    # ------------------------------------------------------------ palette (light/dark switch)
    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and hasattr(self, "plots"):
            pal = self.palette()
            restyle(self.charts, self.plots, pal)
            for band in self.bands:
                band.restyle(pal)
            if self.serve_charts is not None:
                self.serve_charts.restyle(pal)
            elif self.generate_charts is not None:
                self.generate_charts.restyle(pal)
            elif self.state.spec.workload != "train":
                self.latency_chart.restyle(pal)
            self.util.restyle(pal)
            self.memory.restyle(pal)
            self.host_memory.restyle(pal)
            self._drawn_version = -1
            self._dot_status = ""
            self.refresh()

    # ------------------------------------------------------------ for tests and screenshots
    def plot_data(self) -> dict[str, np.ndarray]:
        """What each curve holds now (x and y per curve name)."""
        curves = {"throughput": self.throughput_curve, "host_cpu": self.cpu_curve, "host_mem": self.mem_curve}
        if self.state.spec.workload == "train":
            curves.update(step_time=self.step_curve, step_median=self.median_curve, compiled=self.compiled_curve)
        out = {} if self.state.spec.workload == "train" else self.generate_charts.data() \
            if self.generate_charts is not None else self.serve_charts.data() \
            if self.serve_charts is not None else self.latency_chart.data()
        for name, curve in curves.items():
            _x, y = curve.getOriginalDataset()
            out[name] = np.asarray(y if y is not None else [], dtype=float)
        return out


def _slo(spec: Any) -> dict[str, float] | None:
    """The serve spec's SLO in ms (None without one, or when it does not parse: the run says why)."""
    try:
        return slo_limits(spec.slo or "")
    except ValueError:
        return None
