"""The history view over a store of real runs: what a user sees in the table and what its buttons do."""
from __future__ import annotations

import shutil
import subprocess

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.core.numbers import figure, usd
from app.services.store import RunStore
from app.ui.models.runs_table import COLUMNS
from app.ui.views.history_view import HistoryView
from tests.ui.stored_runs import train_spec
from tests.ui.views_helpers import bridge, show  # noqa: F401

pytestmark = pytest.mark.slow


def cell(view: HistoryView, row: int, column: str) -> str:
    return view.proxy.index(row, COLUMNS.index(column)).data()


def column(view: HistoryView, name: str) -> list[str]:
    return [cell(view, row, name) for row in range(view.proxy.rowCount())]


def row_of(view: HistoryView, run_id: str) -> int:
    return column(view, "Run").index(run_id)


def loaded(qtbot, view: HistoryView, rows: int) -> HistoryView:
    view.refresh()
    qtbot.waitUntil(lambda: not view.loading and view.model.rowCount() == rows)
    return view


@pytest.fixture
def history(qtbot, stored_runs, bridge, show):  # noqa: F811
    return loaded(qtbot, show(HistoryView(stored_runs.paths, bridge)), 3)


def test_every_stored_run_is_listed_newest_first_with_its_figures(history, stored_runs):
    assert column(history, "Run") == stored_runs.ids[::-1]
    assert history.count.text() == "3 runs"
    trn1, infer = stored_runs.train_trn1, stored_runs.infer_inf2
    row = row_of(history, trn1["run_id"])
    assert (cell(history, row, "Host"), cell(history, row, "Instance type"), cell(history, row, "Workload"),
            cell(history, row, "Model"), cell(history, row, "Backend"), cell(history, row, "Status")) == \
        ("trn1-box", "trn1.2xlarge", "training", "timm vit_tiny_patch16_224", "cpu", "ok")
    assert cell(history, row, "Result") == f"{figure(trn1['train']['throughput_samples_per_s'])} samples/s"
    assert cell(history, row, "$ per 1M") == usd(trn1["cost"]["usd_per_1m_samples"])
    # inference: the best batch size's throughput, and the cost per 1M at that batch size
    best = max(infer["infer"], key=lambda r: r["throughput_per_s"])
    cost = next(c for c in infer["cost"]["usd_per_1m_inferences"] if c["batch_size"] == best["batch_size"])
    row = row_of(history, infer["run_id"])
    assert cell(history, row, "Result") == f"{figure(best['throughput_per_s'])} inf/s (batch {best['batch_size']})"
    assert cell(history, row, "$ per 1M") == usd(cost["usd_per_1m"])
    assert "0.7582/h" in history.proxy.index(row, COLUMNS.index("$ per 1M")).data(Qt.ItemDataRole.ToolTipRole)


def test_clicking_a_header_sorts_by_the_number_not_the_text(history, qtbot, stored_runs):
    header = history.table.horizontalHeader()
    result = COLUMNS.index("Result")
    qtbot.mouseClick(header.viewport(), Qt.MouseButton.LeftButton,
                     pos=header.rect().topLeft() + _section_centre(header, result))
    order = header.sortIndicatorOrder()
    figures = [headline(stored_runs.by_id(run_id)) for run_id in column(history, "Run")]
    assert figures == sorted(figures, reverse=order == Qt.SortOrder.DescendingOrder)
    history.table.sortByColumn(result, Qt.SortOrder.DescendingOrder)
    figures = [headline(stored_runs.by_id(run_id)) for run_id in column(history, "Run")]
    assert figures == sorted(figures, reverse=True)


def _section_centre(header, index):
    from PySide6.QtCore import QPoint

    return QPoint(header.sectionViewportPosition(index) + header.sectionSize(index) // 2, header.height() // 2)


def headline(result: dict) -> float:
    if result["workload"] == "train":
        return result["train"]["throughput_samples_per_s"]
    return max(r["throughput_per_s"] for r in result["infer"])


def test_the_filter_hides_the_rows_that_do_not_match(history, qtbot, stored_runs):
    qtbot.keyClicks(history.filter, "INF2")
    assert sorted(column(history, "Run")) == sorted(stored_runs.ids[1:])
    assert history.count.text() == "2 of 3 runs"
    history.filter.setText("inference")
    assert column(history, "Run") == [stored_runs.infer_inf2["run_id"]]
    history.filter.setText("no such run")
    assert column(history, "Run") == [] and history.count.text() == "0 of 3 runs"
    assert not history.compare_button.isEnabled()
    history.filter.clear()
    assert history.proxy.rowCount() == 3


def test_compare_and_rerun_ask_the_window_with_the_selected_runs(history, qtbot, stored_runs):
    assert not history.compare_button.isEnabled() and not history.export.buttons["html"].isEnabled()
    history.select_runs(stored_runs.ids[:2])
    assert history.compare_button.isEnabled() and not history.rerun_button.isEnabled()
    with qtbot.waitSignal(history.compare_requested) as asked:
        qtbot.mouseClick(history.compare_button, Qt.MouseButton.LeftButton)
    assert asked.args == [stored_runs.ids[:2][::-1]]  # in the order shown (newest first)

    history.select_runs([stored_runs.train_trn1["run_id"]])
    assert history.rerun_button.isEnabled()
    assert not history.reattach_button.isEnabled()  # it ended: nothing to re-attach to
    with qtbot.waitSignal(history.rerun_requested) as asked:
        qtbot.mouseClick(history.rerun_button, Qt.MouseButton.LeftButton)
    spec, host = asked.args
    assert host == "trn1-box" and spec == train_spec(8).to_dict()


def test_reattach_is_offered_only_for_a_run_that_did_not_end(qtbot, copy_store, bridge, show):  # noqa: F811
    with RunStore(copy_store.runs_db) as store:
        store.begin_run("20261122-101010-unfin1", "inf2-box", train_spec(4).to_dict())
        store.abandon_run("20261122-101010-unfin1")  # the app closed mid-run: it goes on on the host
    view = loaded(qtbot, show(HistoryView(copy_store, bridge)), 4)
    row = row_of(view, "20261122-101010-unfin1")
    assert cell(view, row, "Status") == "unfinished" and cell(view, row, "Result") == "N/A"
    assert cell(view, row, "$ per 1M") == "N/A"
    for run_id in column(view, "Run"):
        view.select_runs([run_id])
        assert view.reattach_button.isEnabled() == (run_id == "20261122-101010-unfin1"), run_id
    view.select_runs(["20261122-101010-unfin1"])
    with qtbot.waitSignal(view.reattach_requested) as asked:
        qtbot.mouseClick(view.reattach_button, Qt.MouseButton.LeftButton)
    assert asked.args == ["20261122-101010-unfin1", "inf2-box"]


def test_delete_asks_then_removes_the_row_and_the_stored_events(qtbot, copy_store, stored_runs, bridge,  # noqa: F811
                                                                   show):  # noqa: F811
    view = loaded(qtbot, show(HistoryView(copy_store, bridge)), 3)
    gone = stored_runs.train_inf2["run_id"]
    with RunStore(copy_store.runs_db) as store:
        assert store.event_count(gone) > 10 and store.telemetry(gone)
    view.select_runs([gone])
    qtbot.mouseClick(view.delete_button, Qt.MouseButton.LeftButton)
    box = view.delete_question
    assert box is not None and box.isVisible() and gone in box.text()
    # Cancel keeps it
    qtbot.mouseClick(box.button(QMessageBox.StandardButton.Cancel), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: view.delete_question is None)
    assert gone in column(view, "Run")
    # Yes deletes it
    qtbot.mouseClick(view.delete_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(view.delete_question.button(QMessageBox.StandardButton.Yes), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not view.loading and view.model.rowCount() == 2 and gone not in column(view, "Run"))
    assert view.status.text() == "Deleted 1 run(s)."
    with RunStore(copy_store.runs_db) as store:
        assert store.get_run(gone) is None and store.event_count(gone) == 0 and store.telemetry(gone) == []
        assert store.event_count(stored_runs.train_trn1["run_id"]) > 10


def test_export_writes_an_html_report_of_the_selected_runs(history, qtbot, stored_runs, tmp_path):
    history.select_runs(stored_runs.ids[:2])
    target = tmp_path / "history.html"
    history.export_to("html", str(target))
    qtbot.waitUntil(lambda: history.status.text().startswith("Wrote"), timeout=60_000)
    assert history.status.text() == f"Wrote the HTML report of 2 run(s) to {target}"
    text = target.read_text()
    assert text.startswith("<!DOCTYPE html>") and all(run_id in text for run_id in stored_runs.ids[:2])
    assert stored_runs.infer_inf2["run_id"] not in text


@pytest.mark.skipif(not shutil.which("pdftoppm"), reason="poppler-utils is installed by tests/system_packages.sh")
def test_export_through_the_save_dialog_writes_a_pdf_with_pages(history, qtbot, stored_runs, tmp_path,
                                                                 monkeypatch):
    target = tmp_path / "runs"  # no suffix typed: the format's is added
    monkeypatch.setattr("app.ui.views.export.QFileDialog.getSaveFileName",
                        lambda *args, **kwargs: (str(target), "PDF report (*.pdf)"))
    history.select_runs(stored_runs.ids)
    qtbot.mouseClick(history.export.buttons["pdf"], Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: history.status.text().startswith("Wrote"), timeout=120_000)
    pdf = tmp_path / "runs.pdf"
    assert history.status.text() == f"Wrote the PDF report of 3 run(s) to {pdf}"
    subprocess.run(["pdftoppm", "-r", "30", "-png", str(pdf), str(tmp_path / "page")], check=True)
    assert len(list(tmp_path.glob("page*.png"))) >= 2


def test_an_export_that_cannot_be_written_says_why_in_the_view(history, qtbot, stored_runs, tmp_path):
    history.select_runs(stored_runs.ids[:1])
    with qtbot.waitSignal(history.error_raised) as raised:
        history.export_to("csv", str(tmp_path / "missing-folder" / "x.csv"))
    title, message, _ = raised.args
    assert title == "Export failed" and message == history.status.text()
    missing = tmp_path / "missing-folder"
    assert message == f"{missing / 'x.csv'}: the folder {missing} does not exist"
    assert history.status.is_error
