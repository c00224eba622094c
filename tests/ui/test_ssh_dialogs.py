"""The SSH layer's questions as dialogs, against a real OpenSSH server on 127.0.0.1 (tests/e2e/sshd.py).

An unknown host key is shown with its SHA256 fingerprint (the one ssh-keygen
prints) and trusted only on "Trust and connect"; a changed key gets the hard
refusal screen and no way through; an encrypted key asks for its passphrase.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.services.hosts_store import HostsStore
from tests.e2e.conftest import remote_profile
from tests.e2e.sshd import keygen
from tests.e2e.test_ssh_connect import fingerprint_of

pytestmark = pytest.mark.slow
CONNECT_TIMEOUT_MS = 60_000


def click(qtbot, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def window_with_host(make_window, app_paths, profile):
    HostsStore(app_paths.config).add(profile)
    window = make_window()
    window.sidebar.setCurrentRow(1)
    return window


def shown_dialog(window, qtbot, name: str):
    qtbot.waitUntil(lambda: window.prompts.dialog is not None and window.prompts.dialog.objectName() == name,
                    timeout=CONNECT_TIMEOUT_MS)
    dialog = window.prompts.dialog
    qtbot.waitUntil(dialog.isVisible)
    return dialog


def test_test_connection_asks_about_the_unknown_host_key_and_trusts_it_only_when_told(
        make_window, qtbot, app_paths, sshd):
    window = window_with_host(make_window, app_paths, remote_profile(sshd))
    expected = fingerprint_of(Path(f"{sshd.host_key}.pub"))
    known_hosts = app_paths.config / "known_hosts"

    click(qtbot, window.hosts.edit_button)
    editor = window.hosts.editor
    qtbot.waitUntil(editor.isVisible)
    click(qtbot, editor.test_button)
    dialog = shown_dialog(window, qtbot, "host-key-dialog")
    assert dialog.fingerprint.text() == f"ssh-ed25519  {expected}"
    assert dialog.cancel_button.isDefault()  # Enter does not trust a key
    click(qtbot, dialog.cancel_button)
    qtbot.waitUntil(lambda: not editor.testing, timeout=CONNECT_TIMEOUT_MS)
    assert "FAILED: the host key of box" in editor.test_log.toPlainText()
    assert "is not known yet" in editor.test_log.toPlainText()
    assert not known_hosts.exists() or str(sshd.port) not in known_hosts.read_text()

    click(qtbot, editor.test_button)
    dialog = shown_dialog(window, qtbot, "host-key-dialog")
    click(qtbot, dialog.trust_button)
    qtbot.waitUntil(lambda: not editor.testing, timeout=CONNECT_TIMEOUT_MS)
    log = editor.test_log.toPlainText()
    assert f"host key ssh-ed25519 {expected}" in log and "OK: the agent answered" in log, log
    assert "timm 1.0.31 · transformers 5.24.0" in log  # the model libraries the host's Python has
    assert f"[127.0.0.1]:{sshd.port} ssh-ed25519 " in known_hosts.read_text()

    # trusted now: the sidebar's probe goes through without a question
    editor.reject()
    window.hosts.probe_hosts()
    qtbot.waitUntil(lambda: window.sidebar.rows["box"].status in ("ok", "failed"), timeout=CONNECT_TIMEOUT_MS)
    assert window.sidebar.rows["box"].status == "ok", window.sidebar.rows["box"].problem
    assert window.prompts.dialog is None
    assert "transformers 5.24.0" in window.sidebar.item(1).toolTip()  # the host's details name its libraries


def test_a_changed_host_key_gets_the_refusal_screen_and_no_way_through(make_window, qtbot, app_paths, sshd,
                                                                       tmp_path):
    old = keygen(tmp_path / "old_host_key")
    (app_paths.config / "known_hosts").parent.mkdir(parents=True, exist_ok=True)
    (app_paths.config / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {Path(f'{old}.pub').read_text()}")
    window = window_with_host(make_window, app_paths, remote_profile(sshd))
    window.hosts.probe_hosts()
    qtbot.waitUntil(lambda: window.hosts.refusal is not None and window.hosts.refusal.isVisible(),
                    timeout=CONNECT_TIMEOUT_MS)
    refusal = window.hosts.refusal
    text = refusal.informativeText()
    assert "CHANGED" in text and fingerprint_of(Path(f"{old}.pub")) in text
    assert fingerprint_of(Path(f"{sshd.host_key}.pub")) in text and "ssh-keygen -R" in text
    assert [b.text() for b in refusal.buttons()] == ["Close"]  # nothing to click through
    assert window.prompts.dialog is None  # never offered as a new key to trust
    assert window.sidebar.rows["box"].status == "failed"
    assert "CHANGED" in window.errors.entries[0].message.text()
    refusal.close()


def test_an_encrypted_key_asks_for_its_passphrase(make_window, qtbot, app_paths, sshd, tmp_path):
    locked = keygen(tmp_path / "locked", passphrase="s3cret-phrase")
    with open(sshd.root / "authorized_keys", "a") as handle:
        handle.write(Path(f"{locked}.pub").read_text())
    (app_paths.config).mkdir(parents=True, exist_ok=True)
    (app_paths.config / "known_hosts").write_text(
        f"[127.0.0.1]:{sshd.port} {Path(f'{sshd.host_key}.pub').read_text()}")
    window = window_with_host(make_window, app_paths, remote_profile(sshd, identity_file=str(locked)))
    window.hosts.probe_hosts()
    dialog = shown_dialog(window, qtbot, "passphrase-dialog")
    assert str(locked) in dialog.question.text()
    qtbot.keyClicks(dialog.field, "s3cret-phrase")
    qtbot.keyClick(dialog.field, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.sidebar.rows["box"].status in ("ok", "failed"), timeout=CONNECT_TIMEOUT_MS)
    assert window.sidebar.rows["box"].status == "ok", window.sidebar.rows["box"].problem
    assert "s3cret" not in (app_paths.config / "hosts.json").read_text()
