"""Serve in the app: the form offers it ready to run here, and the live charts draw each level as it ends."""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from app.ui import theme
from app.ui.models.run_state import LiveRunState
from app.ui.widgets.serve_chart import ServeCharts
from remote_agent.protocol import RunSpec


def test_serve_starts_from_the_tiny_llama_behind_transformers_serve(make_window, qtbot):
    window = make_window()
    form = window.workload
    form.workload.setCurrentIndex(form.workload.findData("serve"))
    spec = form.spec()
    assert spec.workload == "serve" and spec.model == "hf:neuronbench/tiny-random-llama"
    assert spec.concurrency == (1, 2, 4) and spec.server == "transformers" and spec.model_file is not None
    assert window.run_button.isEnabled()
    assert not form.form.isRowVisible(form.batch_sizes) and form.form.isRowVisible(form.concurrency)
    form.slo.clear()
    qtbot.keyClicks(form.slo, "ttft_p98=2s")
    assert form.message.isVisible() and form.message.text().startswith("--slo: SLO term 'ttft_p98=2s' is not")
    assert not window.run_button.isEnabled()
    form.slo.clear()
    qtbot.keyClicks(form.slo, "mlperf-llama3.1-8b-server")
    assert window.run_button.isEnabled() and form.spec().slo == "mlperf-llama3.1-8b-server"


def _level(concurrency, ttft, tpot, tok_s, rate=None):
    return {"input_len": 16, "output_len": 16, "concurrency": concurrency, "rate": rate, "requests": 20,
            "completed": 20, "errors": 0, "ttft_ms": {"p50": ttft, "p99": ttft * 2},
            "tpot_ms": {"p50": tpot, "p99": tpot * 2}, "output_tok_s": tok_s}


def test_the_live_charts_draw_each_level_and_the_throughput_latency_curve(qtbot):
    spec = RunSpec(workload="serve", model="hf:x", slo="ttft_p99=300ms")
    state = LiveRunState("local", spec)
    for i, level in enumerate([_level(1, 20.0, 5.0, 100.0), _level(2, 30.0, 6.0, 180.0),
                               _level(None, 25.0, 5.5, 150.0, rate=9.5)]):
        state.apply({"v": 1, "seq": i + 2, "t": 100.0 + i, "type": "serve_level", "level": level})
    assert [lv.get("concurrency") for lv in state.serve_levels] == [1, 2, None]
    pal = theme.palette()
    charts = ServeCharts(pg.PlotItem(), pg.PlotItem(), pal, {"ttft_p99": 300.0})
    charts.update(state.serve_levels)
    data = charts.data()
    assert list(data["ttft_p50"]) == [20.0, 30.0, 25.0] and list(data["tpot_p99"]) == [10.0, 12.0, 11.0]
    assert list(data["knee"]) == [40.0, 50.0, 60.0]  # p99 TTFT in order of output tok/s: 100, 150, 180
    assert charts.limit.value() == 300.0
    assert np.isfinite(data["ttft_p99"]).all()


def test_the_live_line_shows_each_levels_error_rate_beside_its_figures():
    from types import SimpleNamespace

    from app.ui.widgets.live_run_view import LiveRunView

    state = LiveRunState("local", RunSpec(workload="serve", model="hf:x"))
    failing = dict(_level(4, 30.0, 6.0, 180.0), requests=15, completed=10, errors=5, error_rate=5 / 15)
    state.apply({"v": 1, "seq": 2, "t": 100.0, "type": "serve_level", "level": failing})
    line = LiveRunView.live_text(SimpleNamespace(state=state))  # the line is the state's alone
    assert "output <b>180.0 tok/s</b> · errors <b>33.3%</b> (5)" in line
    stored_before = dict(_level(1, 20.0, 5.0, 100.0))  # a level of a run stored before error_rate was kept
    state.apply({"v": 1, "seq": 3, "t": 101.0, "type": "serve_level", "level": stored_before})
    assert "errors <b>0%</b>" in LiveRunView.live_text(SimpleNamespace(state=state))
