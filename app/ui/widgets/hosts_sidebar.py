"""The hosts sidebar: a status dot, instance type, NeuronCores/GPUs and price per hour for each host.

Hosts are ticked to run on them (one or many); "This computer" is always there
and ticked for a new user, so Run works at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QAbstractItemView, QListWidget, QListWidgetItem, QWidget

from app.core.hosts import HostProfile
from app.core.pricebook import Price
from app.core.quoting import clean_block
from app.ui import theme
from app.ui.widgets.error_panel import plain_tooltip

NAME_ROLE = Qt.ItemDataRole.UserRole + 1


def libraries_line(env: dict[str, Any]) -> str:
    """torch, torchvision, timm and transformers as a probe reported them, e.g. ``torch 2.9.0 · timm N/A · ...``."""
    return " · ".join(f"{key} {env.get(key) or 'N/A'}" for key in ("torch", "torchvision", "timm", "transformers"))


@dataclass
class HostRow:
    """What the sidebar knows of a host: its profile, and what its last probe said."""

    profile: HostProfile
    status: str = "unknown"           # unknown, probing, ok, failed
    env: dict[str, Any] | None = None
    price: Price | None = None       # on-demand, from the price book, with its source
    problem: str = ""

    @property
    def title(self) -> str:
        return "This computer" if self.profile.local else self.profile.name

    @property
    def instance_type(self) -> str | None:
        launch = self.profile.ec2.instance_type if self.profile.ec2 else None
        return self.profile.instance_type or launch or (self.env or {}).get("instance_type")

    def accelerators(self) -> str:
        env = self.env or {}
        if self.profile.ec2 is not None and not env:
            return "launched per run" + (" (spot)" if self.profile.ec2.spot else "")
        if self.status == "probing" and not env:
            return "probing…"
        if not env:
            return "not probed yet" if self.status != "failed" else "probe failed"
        if env.get("neuron_cores"):
            return f"{env['neuron_cores']} NeuronCores"
        if env.get("gpus"):
            return f"{env['gpus']} GPU{'s' if env['gpus'] != 1 else ''}"
        cpu = env.get("cpu") or {}
        return f"{cpu.get('count', '?')} CPUs, no accelerator"

    def detail(self) -> str:
        kind = self.instance_type or ("not EC2" if self.env else "instance type N/A")
        usd = self.price.usd_per_hour if self.price is not None else None
        price = "N/A" if usd is None else f"${usd:.3f}"
        return f"{kind} · {self.accelerators()} · {price}/h"

    def libraries(self) -> str:
        """The model stack the last probe found, N/A for what is missing (the row's tooltip says it)."""
        return libraries_line(self.env or {})

    def price_note(self) -> str:
        """Where the price comes from (or why there is none): the row's tooltip says it."""
        if self.price is None:
            return "price: N/A (instance type unknown)" if not self.instance_type else "price: N/A (no price book)"
        if self.price.usd_per_hour is None:
            return f"price: N/A ({self.price.note})"
        where = f"{self.price.region}{' (assumed)' if self.price.assumed_region else ''}"
        return f"price: ${self.price.usd_per_hour:.4f}/h on-demand in {where}, {self.price.source_label}"


class HostsSidebar(QListWidget):
    checked_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.rows: dict[str, HostRow] = {}
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setIconSize(QSize(12, 12))
        self.setWordWrap(True)
        self.setUniformItemSizes(False)
        self.setSpacing(2)
        self.itemChanged.connect(self._on_item_changed)

    def set_hosts(self, profiles: list[HostProfile], checked: list[str] | None) -> None:
        """Show ``profiles``; tick ``checked`` (None: just "This computer")."""
        self.blockSignals(True)
        self.clear()
        self.rows = {}
        for profile in profiles:
            row = HostRow(profile)
            self.rows[profile.name] = row
            item = QListWidgetItem()
            item.setData(NAME_ROLE, profile.name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            ticked = profile.local if checked is None else profile.name in checked
            item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)
            self.addItem(item)
            self._draw(item, row)
        if self.count():
            self.setCurrentRow(0)
        self.blockSignals(False)
        self.checked_changed.emit()

    def update_row(self, name: str, **changes: Any) -> None:
        row = self.rows.get(name)
        if row is None:
            return
        for key, value in changes.items():
            setattr(row, key, value)
        item = self._item(name)
        if item is not None:
            self.blockSignals(True)
            self._draw(item, row)
            self.blockSignals(False)

    def checked(self) -> list[HostProfile]:
        return [self.rows[self.item(i).data(NAME_ROLE)].profile for i in range(self.count())
                if self.item(i).checkState() == Qt.CheckState.Checked]

    def set_checked(self, name: str, ticked: bool) -> None:
        item = self._item(name)
        if item is not None:
            item.setCheckState(Qt.CheckState.Checked if ticked else Qt.CheckState.Unchecked)

    def _item(self, name: str) -> QListWidgetItem | None:
        for i in range(self.count()):
            if self.item(i).data(NAME_ROLE) == name:
                return self.item(i)
        return None

    def _draw(self, item: QListWidgetItem, row: HostRow) -> None:
        item.setText(clean_block(f"{row.title}\n{row.detail()}"))  # the probe's instance type is the host's text
        item.setIcon(QIcon(theme.status_dot(row.status, self.palette())))
        tip = row.profile.name if row.profile.local else row.profile.address
        lines = [tip, row.price_note()] + ([row.libraries()] if row.env else [])
        lines += [row.problem] if row.problem else []
        item.setToolTip(plain_tooltip("\n".join(lines)))  # a probe's libraries and failure quote the host

    def _on_item_changed(self, _item: QListWidgetItem) -> None:
        self.checked_changed.emit()

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            for i in range(self.count()):
                item = self.item(i)
                row = self.rows.get(item.data(NAME_ROLE))
                if row is not None:
                    self._draw(item, row)
