"""Hosts in the desktop app: add, edit, remove, import from ~/.ssh/config, prices in the sidebar.

The hosts file is the CLI's (``neuronbench hosts list`` sees what the app saved).
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.services.hosts_store import HostsStore


def click(qtbot, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def type_into(qtbot, editor, field: str, text: str) -> None:
    edit = editor.edits[field]
    edit.clear()
    qtbot.keyClicks(edit, text)


def test_adding_a_host_checks_each_field_as_typed_and_saves_it_for_the_cli(make_window, qtbot, app_paths, run_cli,
                                                                           data_dir):
    window = make_window()
    assert list(window.sidebar.rows) == ["local"]
    assert not window.hosts.edit_button.isEnabled()  # "This computer" is built in
    click(qtbot, window.hosts.add_button)
    editor = window.hosts.editor
    qtbot.waitUntil(editor.isVisible)
    assert not editor.save_button.isEnabled()
    assert "give the host a name" in editor.problem.text()

    type_into(qtbot, editor, "name", "local")
    assert editor.problem.text() == "a host named 'local' exists already; choose another name"
    type_into(qtbot, editor, "name", "trn1-a")
    assert "give --hostname" in editor.problem.text() and not editor.save_button.isEnabled()
    type_into(qtbot, editor, "hostname", "ec2-3-91-0-1.compute-1.amazonaws.com")
    type_into(qtbot, editor, "proxy_jump", "bastion:99999")
    assert "port 99999" in editor.problem.text() and not editor.save_button.isEnabled()
    type_into(qtbot, editor, "proxy_jump", "ubuntu@bastion")
    type_into(qtbot, editor, "user", "ubuntu")
    editor.instance_type.setCurrentText("trn1.2xlarge")
    editor.region.setCurrentText("us-east-1")
    assert editor.problem.isHidden() and editor.save_button.isEnabled()
    assert editor.edits["hostname"].toolTip() == "DNS name or IP address of the host"  # the CLI's help

    window.hosts.probe_host = lambda name: None  # no probe of a made-up address: this test is about the form
    click(qtbot, editor.save_button)
    qtbot.waitUntil(lambda: "trn1-a" in window.sidebar.rows)
    row = window.sidebar.rows["trn1-a"]
    assert row.profile.address == "ubuntu@ec2-3-91-0-1.compute-1.amazonaws.com"
    # priced from the price book before any probe, its source in the tooltip
    assert row.price.usd_per_hour == 1.34375
    assert row.detail() == "trn1.2xlarge · not probed yet · $1.344/h"
    item = window.sidebar.item(1)
    assert "price: $1.3438/h on-demand in us-east-1" in item.toolTip()
    assert item.checkState() == Qt.CheckState.Checked  # a new host is ticked to run on

    out = run_cli("hosts", "list", "--json")
    assert out.code == 0, out.stderr
    saved = {h["name"]: h for h in out.json()}
    assert saved["trn1-a"]["proxy_jump"] == "ubuntu@bastion" and saved["trn1-a"]["instance_type"] == "trn1.2xlarge"


def test_editing_renames_and_removing_asks_first(make_window, qtbot, app_paths):
    from app.core.hosts import HostProfile

    HostsStore(app_paths.config).add(HostProfile(name="g5", hostname="10.0.0.7", user="ubuntu"))
    window = make_window()
    window.hosts.probe_host = lambda name: None
    window.sidebar.setCurrentRow(1)
    assert window.hosts.edit_button.isEnabled() and window.hosts.remove_button.isEnabled()
    click(qtbot, window.hosts.edit_button)
    editor = window.hosts.editor
    qtbot.waitUntil(editor.isVisible)
    assert editor.edits["hostname"].text() == "10.0.0.7"
    type_into(qtbot, editor, "name", "g5-big")
    click(qtbot, editor.save_button)
    qtbot.waitUntil(lambda: "g5-big" in window.sidebar.rows)
    assert HostsStore(app_paths.config).names() == ["local", "g5-big"]

    window.sidebar.setCurrentRow(1)
    click(qtbot, window.hosts.remove_button)
    box = window.hosts.remove_question
    qtbot.waitUntil(box.isVisible)
    assert box.text() == "Forget the host g5-big (ubuntu@10.0.0.7)?"
    click(qtbot, box.button(QMessageBox.StandardButton.Cancel))
    assert HostsStore(app_paths.config).names() == ["local", "g5-big"]
    click(qtbot, window.hosts.remove_button)
    box = window.hosts.remove_question
    qtbot.waitUntil(box.isVisible)
    click(qtbot, next(b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.DestructiveRole))
    qtbot.waitUntil(lambda: list(window.sidebar.rows) == ["local"])
    assert HostsStore(app_paths.config).names() == ["local"]


def test_importing_an_ssh_config_adds_its_hosts_and_says_what_it_skipped(make_window, qtbot, app_paths, tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("Host *\n  User ubuntu\n\nHost trn1\n  HostName 3.91.0.1\n  Port 2222\n\n"
                      "Host inf2\n  HostName 3.91.0.2\n  ProxyJump trn1\n\n"
                      "Host legacy\n  HostName 3.91.0.3\n  ProxyCommand nc %h %p\n")
    window = make_window()
    probed = []
    window.hosts.probe_host = probed.append
    window.hosts.import_ssh_config(str(config))
    assert list(window.sidebar.rows) == ["local", "inf2", "trn1"]
    assert probed == ["inf2", "trn1"]  # the new hosts are asked what they are at once
    assert window.sidebar.rows["trn1"].profile.address == "ubuntu@3.91.0.1:2222"
    assert window.sidebar.rows["inf2"].profile.proxy_jump == "trn1"
    (entry,) = window.errors.entries
    assert "legacy: it uses ProxyCommand" in entry.message.text()
    assert window.status_label.text() == f"Imported 2 host(s) from {config}; skipped 1"
