"""The instance-type and region pair of fields that the price dialogs share.

The region list follows the type (the regions the price book prices it in), and
the first region entry says what happens when none is chosen; each dialog names
that entry itself ("every region" for a price override, "not given" for a run).
"""
from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QCompleter, QFormLayout

from app.core.pricebook import PriceBook


class TypeAndRegion:
    """Two editable combo boxes; ``changed`` is called whenever either settles on a new value."""

    def __init__(self, book: PriceBook, blank_region: str, changed: Callable[[], None],
                 regions_of_known_type_only: bool = False) -> None:
        self.book = book
        self.blank_region = blank_region
        self.changed = changed
        # A declared type is matched case-insensitively against the book; an override may name any type.
        self.known_only = regions_of_known_type_only
        self.instance_type = QComboBox()
        self.instance_type.setEditable(True)
        self.instance_type.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.instance_type.addItems(book.instance_types())
        completer = QCompleter(book.instance_types(), self.instance_type)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)  # "2xl" finds trn1.2xlarge, inf2.2xlarge…
        self.instance_type.setCompleter(completer)
        self.region = QComboBox()
        self.region.setEditable(True)
        self.region.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)

    def start(self, instance_type: str | None, region: str | None) -> None:
        """Show the given values, then follow the user's edits."""
        self.instance_type.setCurrentText(instance_type or "")
        self.fill_regions(region)
        self.instance_type.currentTextChanged.connect(lambda _: self.fill_regions(self.region_value()))
        self.region.currentTextChanged.connect(lambda _: self.changed())

    def type_value(self) -> str:
        return self.instance_type.currentText().strip()

    def region_value(self) -> str | None:
        text = self.region.currentText().strip()
        return None if text in ("", self.blank_region) else text

    def known_type(self) -> str | None:
        """The book's spelling of the typed instance type, or None when the book does not know it."""
        return {t.lower(): t for t in self.book.instance_types()}.get(self.type_value().lower())

    def fill_regions(self, keep: str | None) -> None:
        self.region.blockSignals(True)
        self.region.clear()
        self.region.addItem(self.blank_region)
        self.region.addItems(self.book.regions_of((self.known_type() or "") if self.known_only else self.type_value()))
        self.region.setCurrentText(keep or self.blank_region)
        self.region.blockSignals(False)
        self.changed()


def label_tooltips_from_fields(form: QFormLayout) -> None:
    """Hovering a row's label explains it as hovering its field does."""
    for row in range(form.rowCount()):
        label = form.itemAt(row, QFormLayout.ItemRole.LabelRole)
        field = form.itemAt(row, QFormLayout.ItemRole.FieldRole)
        if label is not None and field is not None and label.widget() and field.widget():
            label.widget().setToolTip(field.widget().toolTip())
