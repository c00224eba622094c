"""The Hosts panel's list of EC2 instances NeuronBench launched and still owns: age, cost so far, Terminate.

Filled on a worker thread at start and after runs (never blocking the UI); with
no credentials or no boto3 it stays hidden: nothing to say to someone who does
not use EC2.
"""
from __future__ import annotations

import time

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QPushButton, QVBoxLayout, QWidget

from app.core.ec2_cost import format_minutes, format_usd
from app.core.quoting import SENTENCE_LIMIT, clean, clean_block
from app.services.ec2.inventory import OwnedInstance

ID_ROLE = Qt.ItemDataRole.UserRole


def describe_owned(o: OwnedInstance, now: float | None = None) -> str:
    """Two short lines (the sidebar is narrow): which instance, then how long and how much so far."""
    spot = " spot" if o.market == "spot" else ""
    use = " · in use by a run" if o.held else ""
    return (f"{o.instance_id} · {o.instance_type}{spot}\n"
            f"{o.state} · {format_minutes(o.age_s(now))} · {format_usd(o.usd_so_far)} so far{use}")


class OwnedInstances(QWidget):
    """Instances left running (or running now); ``terminate_requested`` carries the chosen ones."""

    terminate_requested = Signal(list)  # [OwnedInstance]

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("owned-instances")
        self.instances: list[OwnedInstance] = []
        self.title = QLabel()
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.list = QListWidget()
        self.list.setObjectName("owned-list")
        self.list.setSelectionMode(QListWidget.SelectionMode.ExtendedSelection)
        self.list.setMaximumHeight(110)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.terminate_button = QPushButton("Terminate")
        self.terminate_button.setObjectName("terminate")
        self.terminate_button.setToolTip("terminate the selected instances (asks first); one a run uses is "
                                         "left alone")
        head = QHBoxLayout()
        head.addWidget(self.title, 1)
        head.addWidget(self.terminate_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        layout.addLayout(head)
        layout.addWidget(self.list)
        self.terminate_button.clicked.connect(self._terminate)
        self.list.itemSelectionChanged.connect(self._update)
        self.hide()

    def show_instances(self, instances: list[OwnedInstance], now: float | None = None) -> None:
        now = now or time.time()
        self.instances = list(instances)
        self.list.clear()
        for o in self.instances:
            # Two lines (id and type, then state and cost); its tags are text anyone with the account set.
            item = QListWidgetItem(clean_block(describe_owned(o, now), SENTENCE_LIMIT))
            item.setData(ID_ROLE, o.instance_id)
            off = f"powers itself off {o.max_minutes} min after boot" if o.max_minutes else ""
            item.setToolTip(clean(f"launched for {o.host or '?'} (run {o.run_id or '?'}) in {o.region}; {off}",
                                  SENTENCE_LIMIT))
            self.list.addItem(item)
        total = sum(o.usd_so_far or 0.0 for o in self.instances)
        self.title.setText(f"<b>EC2 instances</b> · {len(self.instances)} running, {format_usd(total)} so far")
        self.setVisible(bool(self.instances))
        self._update()

    def selected(self) -> list[OwnedInstance]:
        ids = {item.data(ID_ROLE) for item in self.list.selectedItems()}
        return [o for o in self.instances if o.instance_id in ids and not o.held]

    def _update(self) -> None:
        self.terminate_button.setEnabled(bool(self.selected()))

    def _terminate(self) -> None:
        chosen = self.selected()
        if chosen:
            self.terminate_requested.emit(chosen)
