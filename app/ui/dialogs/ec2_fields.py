"""The host editor's "Launch on EC2" part: how to launch the instance a run needs.

Fields and tooltips come from ``Ec2Launch`` (the help `hosts add --ec2 --help`
prints); the instance type and region are the editor's own fields.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QFormLayout, QLineEdit, QSpinBox, QWidget

from app.core.ec2_launch import MAX_MINUTES_LIMIT, Ec2Launch

_HELP = {name: meta["help"] for name, meta in Ec2Launch.field_help().items()}
_TEXT = {"key_name": ("Key pair", "the EC2 key pair's name, e.g. bench-key"),
         "subnet": ("Subnet", "default VPC's subnet"),
         "security_group": ("Security group", "the VPC's default group"),
         "ami": ("Image (AMI)", "newest DLAMI for the type, looked up at launch")}


class Ec2Fields(QWidget):
    """Key pair, spot, subnet, security group, image and the dead-man switch of an --ec2 host."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ec2-fields")
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        self.edits: dict[str, QLineEdit] = {}
        for name, (_label, placeholder) in _TEXT.items():
            edit = QLineEdit()
            edit.setObjectName(f"ec2-{name}")
            edit.setToolTip(_HELP[name])
            edit.setPlaceholderText(placeholder)
            edit.textChanged.connect(self.changed)
            self.edits[name] = edit
        self.spot = QCheckBox("Spot instance (cheaper; AWS may take it back mid-run)")
        self.spot.setToolTip(_HELP["spot"])
        self.spot.toggled.connect(self.changed)
        self.max_minutes = QSpinBox()
        self.max_minutes.setObjectName("ec2-max-minutes")
        self.max_minutes.setRange(0, MAX_MINUTES_LIMIT)
        self.max_minutes.setSpecialValueText("the run's estimate × 2 + 15 min")
        self.max_minutes.setSuffix(" min")
        self.max_minutes.setToolTip(_HELP["max_minutes"])
        self.max_minutes.valueChanged.connect(self.changed)
        form.addRow(_TEXT["key_name"][0], self.edits["key_name"])
        form.addRow("", self.spot)
        form.addRow(_TEXT["subnet"][0], self.edits["subnet"])
        form.addRow(_TEXT["security_group"][0], self.edits["security_group"])
        form.addRow(_TEXT["ami"][0], self.edits["ami"])
        form.addRow("Shut down after", self.max_minutes)

    def fill(self, launch: Ec2Launch) -> None:
        for name, edit in self.edits.items():
            edit.setText(getattr(launch, name))
        self.spot.setChecked(launch.spot)
        self.max_minutes.setValue(launch.max_minutes)

    def values(self) -> dict[str, Any]:
        """The Ec2Launch fields other than instance type and region."""
        data: dict[str, Any] = {name: edit.text().strip() for name, edit in self.edits.items()}
        data.update(spot=self.spot.isChecked(), max_minutes=self.max_minutes.value())
        return data
