"""The SSH layer's questions (``SshPrompts``) answered by dialogs, and the refusal screen for a changed key.

Connections happen on worker threads (several hosts at once), but a dialog must
live on the UI thread.  ``DialogPrompts`` posts each question to the UI thread
as a queued signal, shows a *window-modal* dialog with ``open()`` (no nested
event loop: live runs keep drawing), and blocks only the asking worker until
the person answers.  Questions come one at a time; closing the window answers
every pending one with "no".
"""
from __future__ import annotations

import html
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal, Slot
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.core.quoting import clean
from app.services.ssh_prompts import FROM_PYPI, FROM_WHEEL, InstallOffer

_INSTALL_CHOICES = {FROM_PYPI: "Install from PyPI on the host",
                    FROM_WHEEL: "Upload the {library} wheel NeuronBench carries"}


def _mono(text: str) -> QLabel:
    label = QLabel(text)
    label.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _wrapped(rich: str) -> QLabel:
    label = QLabel(rich)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.RichText)
    return label


class HostKeyDialog(QDialog):
    """A host shows a key never seen before: its SHA256 fingerprint, and a choice that defaults to No."""

    def __init__(self, host: str, key_type: str, fingerprint: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("host-key-dialog")
        self.setWindowTitle(f"Unknown host key: {clean(host)}")
        self.fingerprint = _mono(f"{key_type}  {fingerprint}")
        self.fingerprint.setObjectName("fingerprint")
        layout = QVBoxLayout(self)
        layout.addWidget(_wrapped(f"NeuronBench has never connected to <b>{html.escape(host)}</b>. "
                                  "It presents this host key:"))
        layout.addWidget(self.fingerprint)
        layout.addWidget(_wrapped(
            "Trust it only if it is the host's own fingerprint: on an EC2 instance the console's "
            "<i>Get system log</i> prints it at first boot, or run <code>ssh-keygen -lf "
            "/etc/ssh/ssh_host_ed25519_key.pub</code> on the host. Once trusted it is kept in NeuronBench's "
            "known_hosts; a different key later is refused."))
        buttons = QDialogButtonBox()
        self.trust_button = buttons.addButton("Trust and connect", QDialogButtonBox.ButtonRole.AcceptRole)
        self.cancel_button = buttons.addButton("Do not connect", QDialogButtonBox.ButtonRole.RejectRole)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        # Enter must not trust a key: "Do not connect" is the default (set once inside the dialog,
        # or the button box makes its accept button the default when shown).
        self.trust_button.setAutoDefault(False)
        self.cancel_button.setDefault(True)
        self.cancel_button.setFocus()


class PassphraseDialog(QDialog):
    """The passphrase of an encrypted private key; kept in memory for this connection only."""

    def __init__(self, key_path: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("passphrase-dialog")
        self.setWindowTitle("Key passphrase")
        self.field = QLineEdit()
        self.field.setEchoMode(QLineEdit.EchoMode.Password)
        self.field.setToolTip("used to unlock the key in memory; never saved")
        self.question = _wrapped(f"Enter the passphrase for the key <code>{html.escape(key_path)}</code>:")
        layout = QVBoxLayout(self)
        layout.addWidget(self.question)
        layout.addWidget(self.field)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.button(QDialogButtonBox.StandardButton.Cancel).setText("Skip this key")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)


class InstallLibraryDialog(QMessageBox):
    """A library a run needs (timm, torchvision, transformers, optimum-neuron) is missing on a host: install it for
    the agent, or leave it."""

    def __init__(self, offer: InstallOffer, parent: QWidget | None = None) -> None:
        super().__init__(QMessageBox.Icon.Question, f"{offer.library} is missing on {offer.host}",
                         f"The Python NeuronBench uses on {offer.host} ({offer.python}) has no {offer.library}, "
                         f"which {offer.needed_by} need.", parent=parent)
        self.setObjectName("install-library-dialog")
        self.setTextFormat(Qt.TextFormat.PlainText)  # host names and paths are shown as they are
        self.setInformativeText(f"If you install it: {offer.what}. Nothing else on the host changes.")
        self.choice_buttons: dict[str, QPushButton] = {}
        for choice in offer.choices:
            self.choice_buttons[choice] = self.addButton(_INSTALL_CHOICES[choice].format(library=offer.library),
                                                         QMessageBox.ButtonRole.AcceptRole)
        self.leave_button = self.addButton("Leave it", QMessageBox.ButtonRole.RejectRole)
        self.setDefaultButton(self.leave_button)

    def choice(self) -> str | None:
        clicked = self.clickedButton()
        return next((name for name, button in self.choice_buttons.items() if button is clicked), None)


def changed_host_key_box(message: str, parent: QWidget | None = None) -> QMessageBox:
    """The hard refusal for a changed host key: the sentence (host, both fingerprints, the fix), and Close only."""
    box = QMessageBox(QMessageBox.Icon.Critical, "Host key changed: connection refused",
                      "The host presented a different key from the one trusted before. Nothing was sent to it.",
                      QMessageBox.StandardButton.Close, parent)
    box.setObjectName("changed-host-key")
    box.setInformativeText(message)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return box


@dataclass
class Question:
    """One question in flight from a worker thread to the UI thread."""

    kind: str
    args: tuple[Any, ...]
    answered: threading.Event = field(default_factory=threading.Event)
    answer: Any = None


class DialogPrompts(QObject):
    """``SshPrompts`` for the desktop app (see the module docstring)."""

    asked = Signal(object)     # a Question, queued to the UI thread
    shown = Signal(object)     # the dialog now on screen (tests and screenshots find it here)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self._window = parent
        self._one_at_a_time = threading.Lock()
        self._closed = threading.Event()
        self._pending: Question | None = None
        self.dialog: QDialog | None = None
        self.asked.connect(self._show, Qt.ConnectionType.QueuedConnection)

    # ------------------------------------------------------------ SshPrompts (any thread)
    def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        return bool(self._ask("host-key", host, key_type, fingerprint))

    def ask_passphrase(self, key_path: str) -> str | None:
        return self._ask("passphrase", key_path) or None

    def offer_install(self, offer: InstallOffer) -> str | None:
        return self._ask("install", offer)

    def close(self) -> None:
        """The window is going: answer what is pending with no, and every later question too."""
        self._closed.set()
        pending = self._pending
        if pending is not None:
            pending.answered.set()
        if self.dialog is not None:
            self.dialog.reject()

    def _ask(self, kind: str, *args: Any) -> Any:
        if threading.current_thread() is threading.main_thread():  # Qt's GUI thread
            raise RuntimeError("SSH questions must come from a worker thread (the UI thread would wait on itself)")
        with self._one_at_a_time:
            if self._closed.is_set():
                return None
            question = Question(kind, args)
            self._pending = question
            self.asked.emit(question)
            question.answered.wait()
            self._pending = None
            return question.answer if not self._closed.is_set() else None

    # ------------------------------------------------------------ UI thread
    @Slot(object)
    def _show(self, question: Question) -> None:
        if self._closed.is_set():
            question.answered.set()
            return
        dialog, read = self._dialog_for(question)

        def done(code: int) -> None:
            question.answer = read(code)
            self.dialog = None
            dialog.deleteLater()
            question.answered.set()

        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.finished.connect(done)
        self.dialog = dialog
        dialog.open()
        self.shown.emit(dialog)

    def _dialog_for(self, question: Question) -> tuple[QDialog, Callable[[int], Any]]:
        if question.kind == "host-key":
            dialog = HostKeyDialog(*question.args, parent=self._window)
            return dialog, lambda code: code == QDialog.DialogCode.Accepted
        if question.kind == "passphrase":
            dialog = PassphraseDialog(*question.args, parent=self._window)
            return dialog, lambda code: dialog.field.text() if code == QDialog.DialogCode.Accepted else None
        box = InstallLibraryDialog(*question.args, parent=self._window)
        return box, lambda _code: box.choice()
