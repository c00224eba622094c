"""The hosts part of the window: the sidebar, its buttons, and what they do (probe, add, edit, remove, import).

Hosts come from a ``HostProvider``; with the app's own (``StoreHostProvider``)
they are the CLI's saved profiles and can be edited here.  Probes and
connection tests run on worker threads through the bridge.  A changed host key
met anywhere (a probe, a test, a run) gets the hard refusal screen.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import HostKeyError, NeuronBenchError
from app.core.hosts import HostProfile
from app.core.pricebook import PriceBook
from app.services.ec2.inventory import owned_in_saved_regions, terminate_owned
from app.services.host_access import check_host, import_ssh_config
from app.services.session import probe_host
from app.ui.bridge import Bridge
from app.ui.dialogs.host_editor import HostEditor
from app.ui.dialogs.ssh_questions import changed_host_key_box
from app.ui.host_provider import HostProvider
from app.ui.widgets.error_panel import ErrorPanel, describe_exception
from app.ui.widgets.hosts_sidebar import NAME_ROLE, HostsSidebar
from app.ui.widgets.owned_instances import OwnedInstances


@dataclass(frozen=True)
class ProbeOutcome:
    """A probe's answer for one host, or why there is none (a worker thread's result, so it names the host)."""

    name: str
    env: dict[str, Any] | None
    error: BaseException | None


def probe_for_sidebar(provider: HostProvider, host: HostProfile) -> ProbeOutcome:
    transport = None
    try:
        transport = provider.transport_for(host)
        return ProbeOutcome(host.name, probe_host(transport, quick=True), None)
    except Exception as exc:
        return ProbeOutcome(host.name, None, exc)
    finally:
        if transport is not None:
            transport.close()  # its SSH connection (and paramiko's thread) ends with the probe


def test_host(provider: HostProvider, profile: HostProfile, say) -> dict[str, Any]:
    """``hosts test`` for the host editor: connect, prepare, probe (on a worker thread)."""
    transport = provider.transport_for(profile)
    try:
        return check_host(transport, profile, say)
    finally:
        transport.close()


class HostsPanel(QWidget):
    checked_changed = Signal()     # ticks changed, or the current host did (buttons to update)
    status = Signal(str)           # a sentence for the window's status bar
    probed = Signal(str)           # a host's probe came back (its row holds the env)

    def __init__(self, provider: HostProvider, bridge: Bridge, errors: ErrorPanel,
                 price_book: Callable[[], PriceBook | None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.provider = provider
        self.bridge = bridge
        self.errors = errors
        self._price_book = price_book
        self.store = getattr(provider, "store", None)  # None: hosts are not editable (a test's provider)
        self.busy = False
        self.editor: HostEditor | None = None
        self.remove_question: QMessageBox | None = None
        self.refusal: QMessageBox | None = None  # the changed-host-key screen, while shown
        self.terminate_question: QMessageBox | None = None
        self.paths = getattr(provider, "paths", None)  # None: no saved hosts, so no EC2 instances to list
        self.owned = OwnedInstances()

        self.sidebar = HostsSidebar()
        self.sidebar.setMinimumHeight(70)
        self.sidebar.setMaximumHeight(200)
        self.probe_button = QPushButton("Probe again")
        self.probe_button.setToolTip("ask each host again what it has (F5)")
        self.add_button = _tool("Add…", "add an SSH host (Ctrl+N)")
        self.edit_button = _tool("Edit…", "change the selected host, or test its connection")
        self.remove_button = _tool("Remove", "forget the selected host (its runs stay in the history)")
        self.import_button = _tool("Import ~/.ssh/config", "add every concrete Host of an OpenSSH config file")
        head = QHBoxLayout()
        heading = QLabel("<b>Hosts</b>")
        heading.setTextFormat(Qt.TextFormat.RichText)
        head.addWidget(heading, 1)
        head.addWidget(self.probe_button)
        tools = QHBoxLayout()
        for button in (self.add_button, self.edit_button, self.remove_button, self.import_button):
            tools.addWidget(button)
        tools.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(head)
        layout.addWidget(self.sidebar)
        layout.addLayout(tools)
        layout.addWidget(self.owned)

        self.probe_button.clicked.connect(self.probe_hosts)
        self.add_button.clicked.connect(self.add_host)
        self.edit_button.clicked.connect(self.edit_host)
        self.remove_button.clicked.connect(self.remove_host)
        self.import_button.clicked.connect(lambda: self.import_ssh_config())
        self.sidebar.itemDoubleClicked.connect(self.edit_host)
        self.sidebar.checked_changed.connect(self.checked_changed)
        self.sidebar.currentItemChanged.connect(self._update_buttons)
        self.sidebar.currentItemChanged.connect(self.checked_changed)
        self.owned.terminate_requested.connect(self.ask_terminate)

    @property
    def editable(self) -> bool:
        return self.store is not None

    def show_hosts(self, checked: list[str] | None) -> None:
        self.sidebar.set_hosts(self.provider.hosts(), checked)
        self.reprice()
        self._update_buttons()

    def set_busy(self, busy: bool) -> None:
        """While runs go, a host cannot be removed from under them."""
        self.busy = busy
        self._update_buttons()

    def _update_buttons(self) -> None:
        current = self.current_host()
        editable_host = self.editable and current is not None and not current.local
        self.add_button.setEnabled(self.editable)
        self.import_button.setEnabled(self.editable)
        self.edit_button.setEnabled(editable_host)
        self.remove_button.setEnabled(editable_host and not self.busy)

    def current_host(self) -> HostProfile | None:
        item = self.sidebar.currentItem()
        row = self.sidebar.rows.get(item.data(NAME_ROLE)) if item is not None else None
        return row.profile if row is not None else None

    # ------------------------------------------------------------ EC2 instances NeuronBench owns
    @Slot()
    def list_owned_instances(self) -> None:
        """Ask AWS (on a worker thread) for this user's instances; quietly nothing without credentials."""
        if self.paths is None or self.store is None or not any(p.ec2 for p in self.provider.hosts()):
            self.owned.show_instances([])
            return
        self.bridge.call("ec2-owned", owned_in_saved_regions, self.paths, on_done=self._on_owned,
                         on_failed=self._on_owned_failed)

    @Slot(object)
    def _on_owned(self, instances: list) -> None:
        self.owned.show_instances(instances)
        if instances:
            self.status.emit(f"{len(instances)} EC2 instance(s) launched by NeuronBench are running: see Hosts")

    @Slot(object)
    def _on_owned_failed(self, exc: BaseException) -> None:
        self.owned.hide()  # no boto3, no credentials, no network: someone not using EC2 hears nothing
        self.owned.setToolTip(describe_exception(exc)[0])

    @Slot(list)
    def ask_terminate(self, chosen: list) -> None:
        if self.terminate_question is not None or not chosen:
            return
        box = QMessageBox(QMessageBox.Icon.Warning, "Terminate EC2 instances?",
                          f"Terminate {', '.join(o.instance_id for o in chosen)}?", parent=self)
        box.setObjectName("terminate-confirm")
        box.setInformativeText("Whatever is on them is lost; runs on them end.")
        yes = box.addButton("Terminate", QMessageBox.ButtonRole.DestructiveRole)
        yes.setObjectName("terminate-yes")
        box.setDefaultButton(box.addButton(QMessageBox.StandardButton.Cancel))
        self.terminate_question = box

        def answered(_code: int) -> None:
            self.terminate_question = None
            if box.clickedButton() is yes:
                self.bridge.call("ec2-terminate", terminate_owned, chosen, self.paths,
                                 on_done=self._on_terminated, on_failed=self._on_terminate_failed)

        box.finished.connect(answered)
        box.open()

    @Slot(object)
    def _on_terminated(self, ids: list) -> None:
        self.status.emit(f"terminated {', '.join(ids)}")
        self.list_owned_instances()

    @Slot(object)
    def _on_terminate_failed(self, exc: BaseException) -> None:
        self.errors.show_exception("Terminating EC2 instances", exc)
        self.list_owned_instances()

    # ------------------------------------------------------------ probing and prices
    @Slot()
    def probe_hosts(self) -> None:
        for name in list(self.sidebar.rows):
            self.probe_host(name)

    def probe_host(self, name: str) -> None:
        row = self.sidebar.rows.get(name)
        if row is None or row.status == "probing" or row.profile.ec2 is not None:
            return  # an --ec2 host has nothing to probe until a run launches it
        self.sidebar.update_row(name, status="probing", problem="")
        self.bridge.call(f"probe-{name}", probe_for_sidebar, self.provider, row.profile, on_done=self._on_probed)

    @Slot(object)
    def _on_probed(self, outcome: ProbeOutcome) -> None:
        row = self.sidebar.rows.get(outcome.name)
        if row is None:
            return
        if outcome.error is not None:
            message, _detail = describe_exception(outcome.error)
            self.sidebar.update_row(outcome.name, status="failed", problem=message)
            self.errors.show_exception(f"{row.title}: probe failed", outcome.error)
            self.refuse_if_changed_key(outcome.error)
            return
        env = outcome.env or {}
        price = self.provider.price(row.profile, row.profile.instance_type or env.get("instance_type"),
                                    env.get("region"))
        self.sidebar.update_row(outcome.name, status="ok", env=env, price=price,
                                problem="; ".join(env.get("warnings") or []))
        self.probed.emit(outcome.name)

    def checked_envs(self) -> dict[str, dict[str, Any]]:
        """The probes of the ticked hosts that have answered, by the title a person knows them by."""
        rows = [self.sidebar.rows[p.name] for p in self.sidebar.checked() if p.name in self.sidebar.rows]
        return {row.title: row.env for row in rows if row.env}

    def reprice(self) -> None:
        """Price every host again: a declared type before any probe, else the probed one (prices may change)."""
        for name, row in self.sidebar.rows.items():
            region = (row.env or {}).get("region")
            self.sidebar.update_row(name, price=self.provider.price(row.profile, row.instance_type, region))

    def _reload(self, probe: list[str] = ()) -> None:
        """Show the saved hosts again (ticks and earlier probes kept) and probe the ones named."""
        ticked = [h.name for h in self.sidebar.checked()]
        old = dict(self.sidebar.rows)
        self.sidebar.set_hosts(self.provider.hosts(), ticked + list(probe))
        for name, row in old.items():
            if name in self.sidebar.rows and name not in probe and row.profile == self.sidebar.rows[name].profile:
                self.sidebar.update_row(name, status=row.status, env=row.env, price=row.price, problem=row.problem)
        self.reprice()
        for name in probe:
            self.probe_host(name)
        self._update_buttons()

    # ------------------------------------------------------------ a changed host key
    def refuse_if_changed_key(self, exc: BaseException) -> bool:
        """A changed host key gets the hard refusal screen (one at a time), besides the error panel."""
        if not (isinstance(exc, HostKeyError) and exc.changed):
            return False
        if self.refusal is None or not self.refusal.isVisible():
            self.refusal = changed_host_key_box(str(exc), self.window())
            self.refusal.setWindowModality(Qt.WindowModality.WindowModal)
            self.refusal.open()
        return True

    # ------------------------------------------------------------ editing
    def _editor(self, profile: HostProfile | None) -> HostEditor:
        book = self._price_book() or PriceBook()
        types = book.instance_types()
        editor = HostEditor(self.store.names(), profile, instance_types=types,
                            regions=sorted({r for t in types for r in book.regions_of(t)}),
                            start_test=self._start_test, parent=self.window())
        editor.setWindowModality(Qt.WindowModality.WindowModal)
        self.editor = editor
        return editor

    def _start_test(self, profile: HostProfile, say, on_done, on_failed) -> None:
        def failed(exc: BaseException) -> None:
            on_failed(exc)
            self.refuse_if_changed_key(exc)

        self.bridge.call(f"test-{profile.name}", test_host, self.provider, profile, say, on_done=on_done,
                         on_failed=failed)

    @Slot()
    def add_host(self) -> HostEditor | None:
        if not self.editable:
            return None
        editor = self._editor(None)
        editor.accepted.connect(lambda: self._save(editor, None))
        editor.open()
        return editor

    @Slot()
    def edit_host(self) -> HostEditor | None:
        current = self.current_host()
        if not self.editable or current is None or current.local:
            return None
        editor = self._editor(current)
        editor.accepted.connect(lambda: self._save(editor, current.name))
        editor.open()
        return editor

    def _save(self, editor: HostEditor, old_name: str | None) -> None:
        profile = editor.profile()
        if profile is None:
            return
        try:
            if old_name is not None and old_name != profile.name:
                self.store.remove(old_name)
            self.store.add(profile, replace=old_name == profile.name)
        except NeuronBenchError as exc:
            self.errors.show_exception("Saving the host", exc)
            return
        self._reload(probe=[profile.name])
        self.status.emit(f"Saved {profile.name} ({profile.address})")

    @Slot()
    def remove_host(self) -> None:
        current = self.current_host()
        if not self.editable or current is None or current.local:
            return
        box = QMessageBox(QMessageBox.Icon.Question, "Remove host",
                          f"Forget the host {current.name} ({current.address})?", parent=self.window())
        box.setObjectName("remove-host")
        box.setInformativeText("Its runs stay in the history; its key stays in known_hosts.")
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)

        def answered(_code: int) -> None:
            if box.clickedButton() is remove:
                try:
                    self.store.remove(current.name)
                except NeuronBenchError as exc:
                    self.errors.show_exception("Removing the host", exc)
                self._reload()
                self.status.emit(f"Removed {current.name}")
            box.deleteLater()

        box.finished.connect(answered)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        self.remove_question = box
        box.open()

    def import_ssh_config(self, path: str | None = None) -> None:
        if not self.editable:
            return
        if not path:
            path, _ = QFileDialog.getOpenFileName(self.window(), "Import hosts from an OpenSSH config",
                                                  str(Path.home() / ".ssh" / "config"))
            if not path:
                return
        try:
            added, skipped = import_ssh_config(self.store, path)
        except NeuronBenchError as exc:
            self.errors.show_exception("Importing SSH hosts", exc)
            return
        self._reload(probe=[p.name for p in added])
        note = f"Imported {len(added)} host(s) from {path}"
        if skipped:
            note += f"; skipped {len(skipped)}"
            self.errors.show_error(f"Skipped {len(skipped)} host(s) of {path}", "; ".join(skipped))
        self.status.emit(note)


def _tool(text: str, tip: str) -> QToolButton:
    button = QToolButton()
    button.setText(text)
    button.setToolTip(tip)
    button.setAutoRaise(True)
    return button
