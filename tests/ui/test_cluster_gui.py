"""One distributed run from the window: tick two hosts (this computer and a real sshd "node" on 127.0.0.2), choose
"one distributed run", press Run: one view a node (node 0 reports the steps, every node shows its own telemetry),
one run in the history.  Everything is real: the agent, torchrun's rendezvous over loopback, gloo on the CPU."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.ui.views.history_view import COLUMNS as HISTORY_COLUMNS
from tests.e2e.sshd import make_server
from tests.ui.test_real_runs import RUN_TIMEOUT_MS, tiny_training

pytestmark = pytest.mark.slow


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


@pytest.fixture
def node_b(tmp_path: Path, ssh_client):
    server = make_server(tmp_path / "node-b", ssh_client.key, address="127.0.0.2").start()
    yield server
    server.stop()


def test_two_ticked_hosts_train_as_one_distributed_run_with_a_view_a_node(make_window, qtbot, node_b, app_paths):
    from app.services.hosts_store import HostsStore

    HostsStore(app_paths.config).add(node_b.profile("node-b", python=sys.executable))
    window = make_window(probe_hosts=True)
    qtbot.waitUntil(lambda: window.prompts.dialog is not None and window.prompts.dialog.isVisible(), timeout=60_000)
    click(qtbot, window.prompts.dialog.trust_button)  # node-b's host key, seen for the first time
    qtbot.waitUntil(lambda: window.sidebar.rows["node-b"].status == "ok", timeout=60_000)
    window.sidebar.set_checked("node-b", True)
    tiny_training(window, steps=10)
    assert window.distributed.isVisible() and not window.distributed.isChecked()
    assert window.run_button.text() == "Run on the 2 selected hosts"
    window.distributed.setChecked(True)
    assert window.run_button.text() == "Run one training across the 2 hosts"
    click(qtbot, window.run_button)

    views = window.runs.views
    assert [v.title for v in views] == ["This computer · node 0 of 2 (reports the steps)", "node-b · node 1 of 2"]
    assert len({v.job for v in views}) == 1  # one run, one stream
    qtbot.waitUntil(lambda: not window.runs.active_views(), timeout=RUN_TIMEOUT_MS)
    lead, other = views
    for view in views:
        view.refresh()
        assert view.state.status == "ok", view.log.text()
    assert len(lead.plot_data()["step_time"]) == 10 and len(other.plot_data()["step_time"]) == 0
    # Each node's view shows its own telemetry: samples came from both machines.
    assert lead.state.samples_seen > 0 and other.state.samples_seen > 0
    assert other.state.env is not None and other.state.env["hostname"]
    result = lead.state.result
    assert result["train"]["nodes"] == 2 and result["train"]["world_size"] == 2 and result["host"] == "local,node-b"

    window.show_view(window.history)
    history = window.history
    qtbot.waitUntil(lambda: not history.loading and history.model.rowCount() == 1, timeout=30_000)
    assert history.proxy.index(0, HISTORY_COLUMNS.index("Host")).data() == "local,node-b"
    assert history.proxy.index(0, HISTORY_COLUMNS.index("Status")).data() == "ok"
