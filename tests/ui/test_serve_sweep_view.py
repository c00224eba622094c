"""A serve run's Sweep tab and the live view's words for it (issue 28 part 2): a recorded real `transformers serve`
run (tests/data/runs) replayed through the real session layer into the window's live view."""
from __future__ import annotations

import pytest

from app.ui import theme
from app.ui.widgets.serve_sweep import ServeSweep
from tests.ui.conftest import recorded, replay_transport
from tests.ui.test_live_views import ReplayHosts, run_to_the_end

RUN = "serve-transformers-tiny-cpu.events.jsonl"


@pytest.fixture
def serve_view(make_window, qtbot):
    provider = ReplayHosts(cpu=replay_transport(recorded(RUN)))
    window = make_window(provider=provider)
    window.sidebar.set_checked("cpu", True)
    form = window.workload
    form.workload.setCurrentIndex(form.workload.findData("serve"))
    form.slo.setText("mlperf-llama3.1-8b-server")
    (view,) = run_to_the_end(window, qtbot)
    return view


def test_a_serve_run_has_a_sweep_tab_with_a_row_per_level_beside_the_knee_chart(serve_view):
    view = serve_view
    assert "Sweep" in [view.tabs.tabText(i) for i in range(view.tabs.count())]
    sweep = view.serve_sweep
    levels = next(e for e in recorded(RUN) if e["type"] == "result")["result"]["serve"]["levels"]
    assert [sweep.cell_text(i, "Load") for i in range(sweep.table.rowCount())] == ["c=1", "c=2", "c=4", "40.3/s"]
    for i, level in enumerate(levels):
        assert sweep.cell_text(i, "TTFT p99 ms") == f"{level['ttft_ms']['p99']:.3g}"
        assert sweep.cell_text(i, "TPOT p50 ms") == f"{level['tpot_ms']['p50']:.3g}"
        assert sweep.cell_text(i, "output tok/s") == f"{level['output_tok_s']:,.1f}"
        assert sweep.cell_text(i, "SLO") == "met"
        # recorded before the error rate was kept: its errors over its requests (none failed)
        assert sweep.cell_text(i, "Error rate") == "0%"
    knee = sweep.knee_points()
    assert [x for x, _ in knee] == sorted(level["output_tok_s"] for level in levels)
    assert sweep.limit.value() == 2000.0 and "SLO 2000 ms dashed" in sweep.plot.titleLabel.text


def test_the_live_view_names_the_servers_start_scales_its_heat_strip_and_keeps_its_heading_whole(serve_view):
    view = serve_view
    band = view.bands[0]
    band.update(list(view.state.phases), view.state.last_t, 1.0)  # the replay's clock is compressed: zoom in
    labels = band.shown_labels()
    assert "server start/load" in labels and "compile" not in labels
    bar = view.util.colour_bar
    layout = view.util.heat_plot.layout
    assert bar.values == (0, 100) and any(layout.itemAt(i) is bar for i in range(layout.count()))
    assert bar.isVisible() and bar.axis.labelText == "% busy" and bar.axis.isVisible()
    heading = view.heading
    assert heading.text().endswith("≥20 requests and ≥2.0 s per level") and "…" not in heading.text()
    assert heading.wordWrap()
    line = heading.fontMetrics().height()
    assert heading.heightForWidth(320) > 2 * line  # narrow: the summary wraps at words instead of being cut


def test_errors_count_against_the_slo_and_show_as_a_rate(qtbot):
    level = {"input_len": 16, "output_len": 8, "concurrency": 4, "requests": 30, "completed": 20, "errors": 10,
             "error_rate": 1 / 3, "ttft_ms": {"p50": 20.0, "p99": 40.0}, "tpot_ms": {"p50": 5.0, "p99": 9.0},
             "output_tok_s": 150.0, "slo_met": False, "slo_misses": ["error rate 33% > 1%"]}
    sweep = ServeSweep({"ttft_p99": 2000.0})
    qtbot.addWidget(sweep)
    sweep.show_levels([level])
    assert sweep.cell_text(0, "Error rate") == "33%" and sweep.cell_text(0, "SLO") == "missed"
    item = sweep.table.item(0, 0)
    assert item.toolTip() == "error rate 33.3% > 1%"  # judged by the agent's rule, llm_figures.level_meets
    assert item.foreground().color() == theme.error_text_colour(sweep.palette())



def test_levels_that_arrive_one_by_one_update_the_rows_without_qt_complaining(qtbot, qtlog):
    """The live path: the table grows a level at a time and its cells are rewritten, not set again (Qt
    refuses, with a warning on the user's terminal, an item the table already owns)."""
    def level(concurrency: int, tok_s: float) -> dict:
        return {"input_len": 16, "output_len": 8, "concurrency": concurrency, "requests": 20, "completed": 20,
                "errors": 0, "ttft_ms": {"p50": 20.0, "p99": 40.0}, "tpot_ms": {"p50": 5.0, "p99": 9.0},
                "output_tok_s": tok_s}
    sweep = ServeSweep({})
    qtbot.addWidget(sweep)
    sweep.show_levels([level(1, 100.0)])
    sweep.show_levels([level(1, 100.0), level(2, 180.0)])
    assert [sweep.cell_text(i, "Load") for i in range(2)] == ["c=1", "c=2"]
    assert [sweep.cell_text(i, "output tok/s") for i in range(2)] == ["100.0", "180.0"]
    assert [r.message for r in qtlog.records if "QTableWidget" in r.message] == []
