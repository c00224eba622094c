"""The issue's whole journey, as a user clicks it: add a host (a real sshd on 127.0.0.1), trust its key, run a
tiny training on it and on this computer from the Run button, watch the charts fill, find both runs in the
history, compare them, export the comparison as HTML, set a price and see the comparison follow.

Everything is real: the agent zipapp, torch on the CPU, paramiko to OpenSSH, the SQLite run store.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.core.numbers import usd
from app.ui.views.compare_view import COLUMNS
from app.ui.views.history_view import COLUMNS as HISTORY_COLUMNS
from tests.e2e.test_ssh_connect import fingerprint_of
from tests.ui.test_real_runs import RUN_TIMEOUT_MS, events_on_disk, tiny_training

pytestmark = pytest.mark.slow


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def type_into(qtbot, edit, text: str) -> None:
    edit.clear()
    qtbot.keyClicks(edit, text)


def test_add_a_host_run_on_two_hosts_see_history_compare_and_export(make_window, qtbot, sshd, tmp_path):
    window = make_window()

    # ---- add the SSH host through the editor, trusting its key when asked
    click(qtbot, window.hosts.add_button)
    editor = window.hosts.editor
    qtbot.waitUntil(editor.isVisible)
    for field, text in (("name", "box"), ("hostname", "127.0.0.1"), ("user", sshd.user),
                        ("identity_file", str(sshd.client_key)), ("python", sys.executable)):
        type_into(qtbot, editor.edits[field], text)
    editor.port.setValue(sshd.port)
    editor.instance_type.setCurrentText("inf2.xlarge")
    click(qtbot, editor.save_button)
    qtbot.waitUntil(lambda: window.prompts.dialog is not None and window.prompts.dialog.isVisible(), timeout=60_000)
    key_dialog = window.prompts.dialog
    assert fingerprint_of(Path(f"{sshd.host_key}.pub")) in key_dialog.fingerprint.text()
    click(qtbot, key_dialog.trust_button)
    qtbot.waitUntil(lambda: window.sidebar.rows["box"].status == "ok", timeout=60_000)
    assert window.sidebar.rows["box"].detail().startswith("inf2.xlarge · ") and "$0.758/h" in \
        window.sidebar.rows["box"].detail()

    # ---- run a tiny training on both hosts from the button
    tiny_training(window, steps=12)
    assert [h.name for h in window.sidebar.checked()] == ["local", "box"]
    assert window.run_button.text() == "Run on the 2 selected hosts"
    click(qtbot, window.run_button)
    views = {view.job.host: view for view in window.runs.views}
    assert set(views) == {"local", "box"}
    qtbot.waitUntil(lambda: all(len(v.plot_data()["step_time"]) > 0 for v in views.values()),
                    timeout=RUN_TIMEOUT_MS)  # the charts hold data while they run
    qtbot.waitUntil(lambda: not window.runs.active_views(), timeout=RUN_TIMEOUT_MS)
    for view in views.values():
        view.refresh()
        assert view.state.status == "ok", view.log.text()
        assert len(view.plot_data()["step_time"]) == 12
    assert window.status_label.text() == "Finished: ok"
    ids = {host: view.job.run_id for host, view in views.items()}

    # ---- both are in the history, newest first, with their figures
    window.show_view(window.history)
    history = window.history
    qtbot.waitUntil(lambda: not history.loading and history.model.rowCount() == 2, timeout=30_000)
    rows = {history.proxy.index(r, HISTORY_COLUMNS.index("Run")).data(): r for r in range(2)}
    assert set(rows) == set(ids.values())
    box_row = rows[ids["box"]]
    assert history.proxy.index(box_row, HISTORY_COLUMNS.index("Host")).data() == "box"
    assert history.proxy.index(box_row, HISTORY_COLUMNS.index("Status")).data() == "ok"
    # the stored events are the ones the host wrote (local: its run folder here)
    assert window.store.event_count(ids["local"]) == len(events_on_disk(window.paths, ids["local"]))

    # ---- compare them (the first shown is the baseline)
    history.select_runs([ids["local"], ids["box"]])
    with qtbot.waitSignal(window.compare.computed, timeout=60_000):
        click(qtbot, history.compare_button)
    assert window.current_view() is window.compare
    table = [{name: window.compare.table.item(r, c).text() for c, name in enumerate(COLUMNS)}
             for r in range(window.compare.table.rowCount())]
    assert sorted(row["Run"] for row in table) == sorted(ids.values())
    assert table[0]["Difference"] == "baseline"
    box = window.store.get_run(ids["box"]).result
    (box_row,) = [row for row in table if row["Run"] == ids["box"]]
    assert box_row["$/h"] == "$0.7582" and box_row["Host"] == "inf2.xlarge"
    assert list(window.compare.throughput_bars[ids["box"]].opts["height"]) == pytest.approx(
        [box["train"]["throughput_samples_per_s"]])
    assert window.compare.summary.text()  # the decision sentence is there

    # ---- export the comparison as one HTML file
    target = tmp_path / "comparison.html"
    window.compare.export_to("html", str(target))
    qtbot.waitUntil(lambda: target.exists() and window.compare.status.text().startswith("Wrote"), timeout=60_000)
    html = target.read_text()
    assert ids["local"] in html and ids["box"] in html and "<script src=" not in html

    # ---- a price override reaches the comparison and the sidebar
    dialog = window.override_price()
    dialog.instance_type.setCurrentText("inf2.xlarge")
    dialog.region.setCurrentIndex(0)
    type_into(qtbot, dialog.on_demand, "0.5")
    with qtbot.waitSignal(window.compare.computed, timeout=60_000):
        click(qtbot, dialog.save_button)
    row = next(r for r in range(window.compare.table.rowCount())
               if window.compare.table.item(r, COLUMNS.index("Run")).text() == ids["box"])
    assert window.compare.table.item(row, COLUMNS.index("$/h")).text() == usd(0.5)
    assert "$0.500/h" in window.sidebar.rows["box"].detail()


def test_a_run_in_the_history_runs_again_with_its_spec_on_its_host(make_window, qtbot):
    window = make_window()
    tiny_training(window, steps=6, batch_sizes="2")
    click(qtbot, window.run_button)
    qtbot.waitUntil(lambda: bool(window.runs.views) and not window.runs.active_views(), timeout=RUN_TIMEOUT_MS)
    first = window.runs.views[0].job
    tiny_training(window, steps=9, batch_sizes="4")  # the form moves on; the stored spec is what runs again

    history = window.history
    qtbot.waitUntil(lambda: not history.loading and history.model.rowCount() == 1, timeout=30_000)
    history.select_runs([first.run_id])
    click(qtbot, history.rerun_button)
    assert window.current_view() is window.runs
    (again,) = window.runs.views
    assert again.job.run_id != first.run_id and again.job.spec == first.spec
    assert window.workload.form_values()["batch_sizes"] == "2" and window.workload.form_values()["steps"] == 6
    qtbot.waitUntil(lambda: not window.runs.active_views(), timeout=RUN_TIMEOUT_MS)
    qtbot.waitUntil(lambda: not history.loading and history.model.rowCount() == 2, timeout=30_000)
    assert window.store.get_run(again.job.run_id).spec == first.spec.to_dict()
