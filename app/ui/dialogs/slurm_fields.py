"""The host editor's "Slurm login node" part: how runs on the cluster are submitted.

Fields and tooltips come from ``SlurmSettings`` (the help `hosts add --slurm --help` prints).
"""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QCheckBox, QFormLayout, QLineEdit, QSpinBox, QWidget

from app.core.slurm import MAX_TIME_MINUTES, SlurmSettings

_HELP = {name: meta["help"] for name, meta in SlurmSettings.field_help().items()}


class SlurmFields(QWidget):
    """Partition, account, time limit and exclusive nodes of a --slurm host."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("slurm-fields")
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        self.partition = QLineEdit()
        self.partition.setObjectName("slurm-partition")
        self.partition.setPlaceholderText("the cluster's default partition")
        self.account = QLineEdit()
        self.account.setObjectName("slurm-account")
        self.account.setPlaceholderText("your default account")
        for name, edit in (("partition", self.partition), ("account", self.account)):
            edit.setToolTip(_HELP[name])
            edit.textChanged.connect(self.changed)
        self.time_minutes = QSpinBox()
        self.time_minutes.setObjectName("slurm-time")
        self.time_minutes.setRange(0, MAX_TIME_MINUTES)
        self.time_minutes.setSpecialValueText("the partition's limit")
        self.time_minutes.setSuffix(" min")
        self.time_minutes.setToolTip(_HELP["time_minutes"])
        self.time_minutes.valueChanged.connect(self.changed)
        self.exclusive = QCheckBox("Whole nodes (no other job shares them)")
        self.exclusive.setToolTip(_HELP["exclusive"])
        self.exclusive.toggled.connect(self.changed)
        form.addRow("Partition", self.partition)
        form.addRow("Account", self.account)
        form.addRow("Time limit", self.time_minutes)
        form.addRow("", self.exclusive)

    def fill(self, settings: SlurmSettings) -> None:
        self.partition.setText(settings.partition)
        self.account.setText(settings.account)
        self.time_minutes.setValue(settings.time_minutes)
        self.exclusive.setChecked(settings.exclusive)

    def settings(self) -> SlurmSettings:
        """The settings as entered (raises BadSpecError with the field's sentence)."""
        return SlurmSettings(partition=self.partition.text().strip(), account=self.account.text().strip(),
                             time_minutes=self.time_minutes.value(), exclusive=self.exclusive.isChecked())
