"""A Slurm cluster from the window: the host editor's Slurm fields, then a ticked Slurm host, a node count and
Run: the job waits ("Slurm: queued (Resources)" in every node's view) while another job holds the nodes, then
trains on both nodes of the real test Slurm (tests/cluster/slurm_cluster.py), one run in the history."""
from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import Qt

from app.core.hosts import HostProfile
from app.core.slurm import SlurmSettings
from app.ui.dialogs.host_editor import HostEditor
from tests.ui.test_real_runs import RUN_TIMEOUT_MS, tiny_training

pytestmark = pytest.mark.slow


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def test_the_host_editor_saves_a_slurm_login_node_with_its_settings(qtbot):
    editor = HostEditor([])
    qtbot.addWidget(editor)
    editor.edits["name"].setText("hpc")
    editor.edits["hostname"].setText("login.example")
    assert not editor.slurm_fields.isVisibleTo(editor)
    editor.slurm.setChecked(True)
    assert editor.slurm_fields.isVisibleTo(editor) and not editor.ec2.isEnabled()
    editor.slurm_fields.partition.setText("trn 1")
    assert editor.profile() is None and "--partition 'trn 1'" in editor.problem.text()
    editor.slurm_fields.partition.setText("trn1")
    editor.slurm_fields.time_minutes.setValue(45)
    editor.slurm_fields.exclusive.setChecked(True)
    assert editor.profile().slurm == SlurmSettings(partition="trn1", time_minutes=45, exclusive=True)
    again = HostEditor([], editor.profile())  # editing it later shows what was saved
    qtbot.addWidget(again)
    assert again.slurm.isChecked() and again.slurm_fields.partition.text() == "trn1"


def test_a_ticked_slurm_host_trains_on_the_chosen_node_count_and_shows_the_queue(make_window, qtbot, slurm,
                                                                                 app_paths):
    from app.services.hosts_store import HostsStore

    HostsStore(app_paths.config).add(HostProfile(**{**slurm.login.profile("hpc").to_dict(), "python": sys.executable,
                                                    "slurm": SlurmSettings()}))
    window = make_window(probe_hosts=True)
    qtbot.waitUntil(lambda: window.prompts.dialog is not None and window.prompts.dialog.isVisible(), timeout=60_000)
    click(qtbot, window.prompts.dialog.trust_button)
    qtbot.waitUntil(lambda: window.sidebar.rows["hpc"].status == "ok", timeout=60_000)
    window.sidebar.set_checked("local", False)
    window.sidebar.set_checked("hpc", True)
    tiny_training(window, steps=6)
    assert window.slurm_nodes.isVisible() and window.slurm_nodes.value() == 2
    assert window.run_button.text() == "Submit one training on 2 nodes of hpc"

    blocker = slurm.command("sbatch", "--parsable", "--exclusive", "--nodes=2", "--output=/dev/null",
                            "--wrap", "sleep 300").stdout.strip()
    try:
        click(qtbot, window.run_button)
        views = window.runs.views
        assert [v.title for v in views] == ["hpc · node 0 of 2 (reports the steps)", "hpc · node 1 of 2"]
        qtbot.waitUntil(lambda: all(v.state.activity == "Slurm: queued (Resources)" for v in views),
                        timeout=60_000)
        for view in views:
            view.refresh()
            assert view.activity.text() == "Slurm: queued (Resources)"
    finally:
        slurm.command("scancel", blocker)
    qtbot.waitUntil(lambda: not window.runs.active_views(), timeout=RUN_TIMEOUT_MS)
    lead, other = views
    for view in views:
        view.refresh()
        assert view.state.status == "ok", view.log.text()
    assert len(lead.plot_data()["step_time"]) == 6 and other.state.samples_seen > 0
    result = lead.state.result
    assert result["host"] == "hpc" and result["train"]["nodes"] == 2 and result["train"]["world_size"] == 2
    stored = window.store.load(result["run_id"])
    assert stored.status == "ok" and stored.host == "hpc"
