"""neuron-monitor's own FLOP/s beside our MFU in the app: the finished run's status line, its Result tab and
compare; nothing extra for a run that had no neuron-monitor (a CPU).

From the recorded inf2 run on the Neuron test doubles (tests/data/runs/README.md), replayed through the real
session layer and window, and stored as `neuronbench run` stores it for compare.
"""
from __future__ import annotations

import pytest

from app.services.recorder import with_mfu
from app.ui.models.result_line import result_line
from app.ui.views.compare_view import COLUMNS, MONITOR, CompareView
from tests.reports.test_monitor_flops import CPU, NEURON, NEURON_STREAM, monitor_figure, store_recorded
from tests.ui.conftest import recorded
from tests.ui.test_compare_view import compared, table
from tests.ui.test_live_view_cpu_host import run_view
from tests.ui.views_helpers import bridge, show  # noqa: F401

pytestmark = pytest.mark.slow


def result_of(name: str) -> dict:
    return with_mfu(next(e for e in recorded(name) if e["type"] == "result")["result"])


def test_the_finished_line_has_it_beside_mfu_on_neuron_and_not_on_a_cpu():
    tflops = f"{monitor_figure():.4g}"
    line = result_line(result_of(NEURON_STREAM))
    assert f"MFU <b>0.00027%</b>, neuron-monitor {tflops} TFLOP/s, check" in line  # an inference row joins by ","
    assert "neuron-monitor" not in result_line(result_of("infer-cpu-tiny.events.jsonl"))


def test_a_replayed_neuron_run_shows_it_in_the_status_line_and_the_result_tab(make_window, qtbot):
    view = run_view(make_window, qtbot, recorded(NEURON_STREAM))
    tflops = f"{monitor_figure():.4g}"
    assert f"neuron-monitor {tflops} TFLOP/s" in view.figures.text()
    assert f"neuron-monitor's own count {tflops} TFLOP/s" in view.result_text.toPlainText()


def test_compare_has_a_column_only_where_a_run_ran_under_neuron_monitor(app_paths, bridge, show, qtbot):  # noqa: F811
    store_recorded(app_paths, NEURON_STREAM, "inf2-box", NEURON, "inf2.xlarge")
    store_recorded(app_paths, "infer-cpu-tiny.events.jsonl", "cpu-box", CPU, "c7i.xlarge")
    view = show(CompareView(app_paths, bridge), (1400, 850))
    column = COLUMNS.index(MONITOR)
    compared(qtbot, view, [NEURON, CPU])
    assert not view.table.isColumnHidden(column)
    cells = {(r["Run"], r["Batch"]): r[MONITOR] for r in table(view)}
    assert cells == {(NEURON, "4"): f"{monitor_figure():.4g}", (CPU, "1"): "", (CPU, "4"): ""}

    compared(qtbot, view, [CPU])
    assert view.table.isColumnHidden(column) and not view.table.isColumnHidden(COLUMNS.index("MFU"))
