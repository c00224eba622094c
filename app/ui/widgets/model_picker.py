"""A model name field that searches timm's model names as you type (the names load in the background)."""
from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QStringListModel, Qt
from PySide6.QtWidgets import QCompleter, QLineEdit, QWidget


class ModelPicker(QLineEdit):
    """Free text (any timm or hf-hub name is allowed) with a substring completer over the known names."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._names = QStringListModel(self)
        completer = QCompleter(self._names, self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        completer.setMaxVisibleItems(14)
        self.setCompleter(completer)
        self.setClearButtonEnabled(True)
        self.setPlaceholderText("timm model name, e.g. vit_base_patch16_224")

    def set_names(self, names: Iterable[str], source: str = "") -> None:
        """Offer ``names``; keep what is typed."""
        names = sorted(set(names))
        self._names.setStringList(names)
        self.setPlaceholderText(f"search {len(names)} timm models{' (' + source + ')' if source else ''}")

    def names(self) -> list[str]:
        return self._names.stringList()
