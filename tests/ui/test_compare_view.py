"""The compare view over real stored runs: the decision sentence, the table, the charts, baseline, prices, export."""
from __future__ import annotations

import pytest

from app.core.numbers import figure, usd
from app.services.store import RunStore
from app.ui.views.compare_view import COLUMNS, MONITOR, CompareView
from tests.ui.stored_runs import train_spec
from tests.ui.views_helpers import bridge, show  # noqa: F401

pytestmark = pytest.mark.slow
TRN1_ON_DEMAND, TRN1_SPOT, INF2_ON_DEMAND = 1.34375, 0.2198, 0.7582  # resources/pricing, us-east-1


def table(view: CompareView) -> list[dict[str, str]]:
    return [{name: view.table.item(row, col).text() for col, name in enumerate(COLUMNS)}
            for row in range(view.table.rowCount())]


def compared(qtbot, view: CompareView, run_ids: list[str]) -> CompareView:
    with qtbot.waitSignal(view.computed, timeout=30_000):
        view.set_runs(run_ids)
    return view


@pytest.fixture
def view(stored_runs, bridge, show):  # noqa: F811
    return show(CompareView(stored_runs.paths, bridge), (1400, 850))


def test_two_training_runs_side_by_side_with_the_decision_sentence(view, qtbot, stored_runs):
    trn1, inf2 = stored_runs.train_trn1, stored_runs.train_inf2
    compared(qtbot, view, [trn1["run_id"], inf2["run_id"]])
    thr = {r["run_id"]: r["train"]["throughput_samples_per_s"] for r in (trn1, inf2)}
    pp = (thr[inf2["run_id"]] / INF2_ON_DEMAND) / (thr[trn1["run_id"]] / TRN1_ON_DEMAND)
    sentence = view.summary.text()
    assert (f"inf2.xlarge trains vit_tiny_patch16_224 at {pp:.2f}× the samples per dollar of trn1.2xlarge"
            in sentence)
    assert "one run each, so the difference is not tested" in sentence
    rows = table(view)
    assert [r["Run"] for r in rows] == [trn1["run_id"], inf2["run_id"]]  # the baseline first
    base, other = rows
    assert base["Host"] == "trn1.2xlarge" and other["Host"] == "inf2.xlarge"
    assert (base["Batch"], other["Batch"]) == ("8", "4")
    assert base["Throughput"] == f"{figure(thr[trn1['run_id']])} samples/s"
    assert (base["$/h"], other["$/h"]) == ("$1.344", "$0.7582")
    assert base["Price source"].startswith("skypilot-org/skypilot-catalog") and "snapshot date unknown" in \
        base["Price source"]
    assert other["$ per 1M"] == usd(INF2_ON_DEMAND / 3600 / thr[inf2["run_id"]] * 1e6)
    assert base["Work per $ vs baseline"] == "1.00×" and other["Work per $ vs baseline"] == f"{pp:.2f}×"
    assert base["Difference"] == "baseline" and other["Difference"] == "not tested (single runs)"
    assert base["95% CI"] == "—"  # single runs: no interval
    # the bars are the figures in the table
    for run_id, bars in view.throughput_bars.items():
        assert list(bars.opts["height"]) == pytest.approx([thr[run_id]])
    assert list(view.cost_bars[trn1["run_id"]].opts["height"]) == pytest.approx(
        [TRN1_ON_DEMAND / 3600 / thr[trn1["run_id"]] * 1e6])
    assert view.latency_curves == {}
    assert "no inference runs" in view.latency_plot.titleLabel.text
    assert view.status.text() == "2 run(s) compared with on-demand prices."


def test_picking_another_baseline_recomputes(view, qtbot, stored_runs):
    trn1, inf2 = stored_runs.train_trn1["run_id"], stored_runs.train_inf2["run_id"]
    compared(qtbot, view, [trn1, inf2])
    assert [view.baseline.itemData(i) for i in range(view.baseline.count())] == [trn1, inf2]
    with qtbot.waitSignal(view.computed, timeout=30_000):
        view.baseline.setCurrentIndex(1)
        view.baseline.activated.emit(1)  # what a user's pick sends
    assert view.doc["baseline"] == inf2 and view.baseline.currentData() == inf2
    rows = table(view)
    assert rows[0]["Run"] == inf2 and rows[0]["Difference"] == "baseline"
    assert rows[0]["Work per $ vs baseline"] == "1.00×"
    assert "trn1.2xlarge trains vit_tiny_patch16_224 at" in view.summary.text()
    assert "the samples per dollar of inf2.xlarge" in view.summary.text()


def test_spot_prices_change_every_cost_figure(view, qtbot, stored_runs):
    trn1 = stored_runs.train_trn1
    compared(qtbot, view, [trn1["run_id"], stored_runs.train_inf2["run_id"]])
    with qtbot.waitSignal(view.computed, timeout=30_000):
        view.market.setCurrentIndex(1)
        view.market.activated.emit(1)
    base = table(view)[0]
    assert base["$/h"] == "$0.2198"
    thr = trn1["train"]["throughput_samples_per_s"]
    assert base["$ per 1M"] == usd(TRN1_SPOT / 3600 / thr * 1e6)
    assert view.status.text() == "2 run(s) compared with spot prices."


def test_an_inference_sweep_draws_latency_against_throughput_per_batch_size(view, qtbot, stored_runs):
    infer = stored_runs.infer_inf2
    compared(qtbot, view, stored_runs.ids)
    rows = [r for r in table(view) if r["Run"] == infer["run_id"]]
    assert [r["Batch"] for r in rows] == ["1", "2"] and all(r["Workload"] == "inference" for r in rows)
    for row, measured in zip(rows, infer["infer"], strict=True):
        assert row["Throughput"] == f"{figure(measured['throughput_per_s'])} inferences/s"
        assert row["p50 ms"] == figure(measured["latency_ms"]["p50"], 3)
        assert row["p99 ms"].lstrip("~") == figure(measured["latency_ms"]["p99"], 3)
        assert row["p99 ms"].startswith("~") == (measured["p99_reliable"] is False)  # fewer than 100 requests
    x, y = view.latency_curves[infer["run_id"]].getData()
    assert list(x) == pytest.approx([r["throughput_per_s"] for r in infer["infer"]])
    assert list(y) == pytest.approx([r["latency_ms"]["p99"] for r in infer["infer"]])
    # the inference run's bars stand in the batch-size groups, the training runs' in "training"
    ticks = [label for _, label in view.throughput_plot.getAxis("bottom")._tickLevels[0]]
    assert ticks == ["training", "batch 1", "batch 2"]
    assert list(view.throughput_bars[infer["run_id"]].opts["height"]) == pytest.approx(
        [r["throughput_per_s"] for r in infer["infer"]])
    assert infer["run_id"] in view.legend.text()


def test_runs_without_a_result_are_one_sentence_in_the_view(qtbot, copy_store, bridge, show):  # noqa: F811
    with RunStore(copy_store.runs_db) as store:
        store.begin_run("20261122-101010-unfin2", "inf2-box", train_spec(4).to_dict())
        store.abandon_run("20261122-101010-unfin2")
    view = show(CompareView(copy_store, bridge))
    with qtbot.waitSignal(view.error_raised, timeout=30_000) as raised:
        view.set_runs(["20261122-101010-unfin2"])
    title, message, _ = raised.args
    assert title == "The runs cannot be compared"
    assert message.startswith("none of the runs has a result to compare (20261122-101010-unfin2 on inf2-box: "
                              "unfinished: no result was received (re-attach to finish it))")
    assert view.summary.text() == message and view.status.is_error
    assert view.table.rowCount() == 0 and not view.export.buttons["html"].isEnabled()


def test_export_writes_the_comparison_as_html(view, qtbot, stored_runs, tmp_path):
    ids = [stored_runs.train_trn1["run_id"], stored_runs.train_inf2["run_id"]]
    compared(qtbot, view, ids)
    target = tmp_path / "compare.html"
    view.export_to("html", str(target))
    qtbot.waitUntil(lambda: view.status.text().startswith("Wrote"), timeout=60_000)
    assert view.status.text() == f"Wrote the HTML report of 2 run(s) to {target}"
    text = target.read_text()
    assert all(run_id in text for run_id in ids) and "inf2.xlarge trains vit_tiny_patch16_224 at" in text


def test_a_hostile_instance_type_and_host_reach_the_table_escaped_and_short(view, qtbot, stored_runs):
    trn1, inf2 = stored_runs.train_trn1["run_id"], stored_runs.train_inf2["run_id"]
    compared(qtbot, view, [trn1, inf2])
    hostile = "\x1b[2J\x07trn1\r\n" + "x" * 100_000  # a declared type or a host's own answer, as it came
    doc = {**view.doc, "rows": [dict(row, instance_type=hostile, label=hostile, price_note=hostile)
                                for row in view.doc["rows"]]}
    view._fill_table(doc)
    host = COLUMNS.index("Host")
    for row in range(view.table.rowCount()):
        for col in range(len(COLUMNS)):
            item = view.table.item(row, col)
            for text in (item.text(), item.toolTip()):
                assert not any(c in text for c in "\x1b\x07\r\n"), (COLUMNS[col], text[:80])
                assert len(text) < 2_200, COLUMNS[col]
        assert view.table.item(row, host).toolTip().startswith("\\x1b[2J\\x07trn1\\r\\nxxx")


def test_the_empty_view_has_no_column_no_run_has_and_no_axes(view, qtbot, stored_runs):
    monitor = COLUMNS.index(MONITOR)
    header = view.table.horizontalHeader()

    def whole_headers() -> bool:  # every shown header as wide as its text needs: none elided
        return all(view.table.columnWidth(col) >= header.sectionSizeHint(col) for col in range(len(COLUMNS))
                   if not view.table.isColumnHidden(col))

    assert view.summary.text() == "Select runs in the history and press Compare."
    assert view.table.isColumnHidden(monitor) and not view.charts_panel.isVisible() and whole_headers()
    compared(qtbot, view, [stored_runs.train_trn1["run_id"], stored_runs.train_inf2["run_id"]])
    assert view.charts_panel.isVisible() and view.table.isColumnHidden(monitor)  # CPU runs: no neuron-monitor
    view.set_runs([])  # back to no runs: the same empty state, not the last comparison's axes
    assert view.table.rowCount() == 0 and not view.charts_panel.isVisible() and view.table.isColumnHidden(monitor)
    assert whole_headers()
