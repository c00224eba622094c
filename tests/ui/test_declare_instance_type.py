"""History → "Declare instance type…": a run without a price gets one; History and Compare show it at once."""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from app.core.numbers import usd
from app.services.pricing import load_pricebook
from app.services.recorder import run_recorded
from app.services.store import RunStore
from app.services.transport import LocalTransport
from app.ui.models.runs_table import COLUMNS as HISTORY_COLUMNS
from tests.ui.stored_runs import train_spec
from tests.ui.test_compare_view import table

pytestmark = pytest.mark.slow
TRN1_US_EAST_1 = 1.34375  # resources/pricing: trn1.2xlarge on-demand


def history_cell(window, run_id: str, column: str, role=Qt.ItemDataRole.DisplayRole):
    proxy = window.history.proxy
    row = next(r for r in range(proxy.rowCount()) if proxy.index(r, 0).data() == run_id)
    return proxy.index(row, HISTORY_COLUMNS.index(column)).data(role)


def test_declaring_the_instance_type_prices_the_run_in_history_and_compare(make_window, qtbot, app_paths):
    # A real tiny run on this computer, recorded as `neuronbench run --host local` records it: no type, no price.
    with RunStore(app_paths.runs_db) as store:
        result = run_recorded(LocalTransport(app_paths, host="laptop"), train_spec(4), store,
                              load_pricebook(app_paths))
    assert result["status"] == "ok" and result["cost"]["usd_per_hour"] is None
    run_id = result["run_id"]
    window = make_window()
    with qtbot.waitSignal(window.compare.computed, timeout=30_000):
        window.show_comparison([run_id])
    assert table(window.compare)[0]["$/h"] == "N/A"

    history = window.history
    history.refresh()
    qtbot.waitUntil(lambda: not history.loading and history.model.rowCount() == 1)
    assert history_cell(window, run_id, "Instance type") == "unknown"
    assert history_cell(window, run_id, "$ per 1M") == "N/A"
    assert not history.declare_button.isEnabled()  # nothing selected
    history.select_runs([run_id])
    assert history.declare_button.isEnabled()

    dialog = history.declare_selected()
    assert dialog is not None and dialog.isVisible()
    assert not dialog.declare_button.isEnabled()  # no type yet
    qtbot.keyClicks(dialog.instance_type.lineEdit(), "trn1.2xl")
    assert not dialog.declare_button.isEnabled()
    assert "'trn1.2xl' is not an instance type in the price book: did you mean trn1.2xlarge" in dialog.message.text()
    dialog.instance_type.lineEdit().clear()
    qtbot.keyClicks(dialog.instance_type.lineEdit(), "trn1.2xlarge")
    assert dialog.declare_button.isEnabled() and dialog.message.text() == ""
    assert "$1.344/h" in dialog.price.text() and "us-east-1" in dialog.price.text()
    assert [dialog.region.itemText(i) for i in range(1, dialog.region.count())] == \
        ["us-east-1", "us-east-2", "us-west-2"]  # the regions the price book lists for it
    dialog.region.setCurrentText("us-east-1")

    with qtbot.waitSignal(history.runs_priced, timeout=30_000) as priced, \
            qtbot.waitSignal(window.compare.computed, timeout=30_000):
        qtbot.mouseClick(dialog.declare_button, Qt.MouseButton.LeftButton)
    assert priced.args == [[run_id]]

    throughput = result["train"]["throughput_samples_per_s"]
    [row] = table(window.compare)  # the comparison on screen priced it again at once
    assert row["$/h"] == "$1.344" and row["Host"] == "trn1.2xlarge (declared after the run)"
    assert row["$ per 1M"] == usd(TRN1_US_EAST_1 / 3600 / throughput * 1e6)
    qtbot.waitUntil(lambda: not history.loading and history_cell(window, run_id, "Instance type") == "trn1.2xlarge")
    assert history_cell(window, run_id, "$ per 1M") == usd(TRN1_US_EAST_1 / 3600 / throughput * 1e6)
    assert "declared after the run" in history_cell(window, run_id, "Instance type", Qt.ItemDataRole.ToolTipRole)
    assert "Declared trn1.2xlarge for 1 run(s) ($1.344/h)" in history.status.text()
    qtbot.waitUntil(lambda: history.declare_dialog is None)  # closed and gone
