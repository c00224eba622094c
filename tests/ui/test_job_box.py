"""Compare's "Your job" box over real stored runs: type a job's size, read its hours and dollars per host."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app.ui.views.compare_view import COLUMNS, CompareView
from app.ui.views.job_box import COLUMNS as JOB_COLUMNS
from tests.ui.views_helpers import bridge, show  # noqa: F401

pytestmark = pytest.mark.slow
TRN1_ON_DEMAND, TRN1_SPOT = 1.34375, 0.2198  # resources/pricing, us-east-1


@pytest.fixture
def view(stored_runs, bridge, show):  # noqa: F811
    return show(CompareView(stored_runs.paths, bridge), (1400, 900))


def job_table(view: CompareView) -> list[dict[str, str]]:
    box = view.job_box.table
    return [{name: box.item(row, col).text() for col, name in enumerate(JOB_COLUMNS)} for row in range(box.rowCount())]


def type_into(qtbot, widget, text: str) -> None:
    widget.clear()
    qtbot.keyClicks(widget, text)
    qtbot.keyClick(widget, Qt.Key.Key_Return)


def test_typing_a_job_size_shows_its_hours_and_dollars_on_every_host(view, qtbot, stored_runs):
    trn1, infer = stored_runs.train_trn1, stored_runs.infer_inf2
    with qtbot.waitSignal(view.computed, timeout=30_000):
        view.set_runs([trn1["run_id"], infer["run_id"]])
    assert not view.job_box.table.isVisible()  # nothing sized yet
    # Every priced run shows what the benchmark itself cost (these hosts are this computer, declared as instances).
    bench = {view.table.item(r, 0).text(): view.table.item(r, COLUMNS.index("Benchmark $")).text()
             for r in range(view.table.rowCount()) if view.table.item(r, COLUMNS.index("Benchmark $")).text()}
    assert set(bench) == {trn1["run_id"], infer["run_id"]} and all(v.startswith("$") for v in bench.values())

    box = view.job_box
    box.epochs.setValue(2)
    with qtbot.waitSignal(view.computed, timeout=30_000):
        type_into(qtbot, box.dataset, "1.2M")
    rows = job_table(view)
    assert [r["Workload"] for r in rows] == ["training"]  # no requests typed: inference is not sized
    throughput = trn1["train"]["throughput_samples_per_s"]
    hours = 2.4e6 / throughput / 3600  # eager CPU training: nothing compiled, so cold = warm
    assert rows[0]["Hours cold"] == rows[0]["Hours warm"] == f"{hours:.3g}"
    assert rows[0]["On-demand $ cold"] == f"${hours * TRN1_ON_DEMAND:,.2f}"
    assert rows[0]["Spot $ warm"] == f"${hours * TRN1_SPOT:,.2f}"
    assert "2,400,000 samples (2 epochs × 1,200,000)" in box.problem.text()
    assert "Your job of 2,400,000 samples" in view.summary.text()

    with qtbot.waitSignal(view.computed, timeout=30_000):
        type_into(qtbot, box.requests, "10M")
    assert [r["Batch"] for r in job_table(view) if r["Workload"] == "inference"] == ["1", "2"]


def test_a_size_that_is_not_a_count_is_refused_in_one_sentence_without_recomputing(view, qtbot,
                                                                                      stored_runs):
    with qtbot.waitSignal(view.computed, timeout=30_000):
        view.set_runs([stored_runs.train_trn1["run_id"]])
    with qtbot.assertNotEmitted(view.job_box.changed):
        type_into(qtbot, view.job_box.dataset, "lots")
    assert view.job_box.problem.text() == "'lots' is not a dataset size (e.g. 1281167, 1.2M or 3e6)."
    assert not view.job_box.table.isVisible()
    # Inference was not measured here, so its field is off and says why.
    assert not view.job_box.requests.isEnabled() and "no inference run" in view.job_box.requests.toolTip()
