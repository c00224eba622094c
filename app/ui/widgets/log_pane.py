"""A run's log: agent messages, the workload's stderr (compiler and runtime text) and errors, as they come.

A list view over a bounded model rather than a text editor: QPlainTextEdit keeps
about 7 KB per appended line (its block layouts), which for 16 live runs was
the app's largest memory cost; here a line costs its string, and only the rows
on screen are ever laid out.  Lines can be selected and copied (Ctrl+C).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFontDatabase, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QAbstractItemView, QListView, QWidget

from app.ui import theme

MAX_LINES = 5_000  # older lines scroll out; the whole stderr stays in the run directory on the host
Index = QModelIndex | QPersistentModelIndex


class LogModel(QAbstractListModel):
    """The last MAX_LINES ``(t, level, message)`` lines, as display strings."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.lines: deque[tuple[str, str]] = deque()  # (level, text)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008 - Qt's signature
        return 0 if parent.isValid() else len(self.lines)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.lines):
            return None
        level, text = self.lines[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return text
        if role == Qt.ItemDataRole.ForegroundRole and level in ("error", "warning"):
            return theme.error_text_colour()
        return None

    def append(self, lines: list[tuple[float, str, str]]) -> None:
        if not lines:
            return
        lines = lines[-MAX_LINES:]
        overflow = len(self.lines) + len(lines) - MAX_LINES
        if overflow > 0:
            self.beginRemoveRows(QModelIndex(), 0, overflow - 1)
            for _ in range(overflow):
                self.lines.popleft()
            self.endRemoveRows()
        start = len(self.lines)
        self.beginInsertRows(QModelIndex(), start, start + len(lines) - 1)
        self.lines.extend((level, f"{t:8.2f}s {level:<7} {message}") for t, level, message in lines)
        self.endInsertRows()


class LogPane(QListView):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model_ = LogModel(self)
        self.setModel(self.model_)
        self.setUniformItemSizes(True)  # one row height: no per-line layout, scrolling stays O(1)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setToolTip("The agent's messages and the workload's output (select lines and Ctrl+C to copy)")

    @property
    def lines_shown(self) -> int:
        return len(self.model_.lines)

    def add(self, lines: Iterable[tuple[float, str, str]]) -> None:
        """Append ``(t, level, message)`` lines; keeps the view at the bottom if it was there."""
        bar = self.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 2
        self.model_.append(list(lines))
        if at_bottom:
            self.scrollToBottom()

    def text(self) -> str:
        """Every line held, as one text (what a user would copy with Select All)."""
        return "\n".join(text for _level, text in self.model_.lines)

    def keyPressEvent(self, event) -> None:
        if event.matches(QKeySequence.StandardKey.Copy):
            rows = sorted(index.row() for index in self.selectedIndexes())
            QGuiApplication.clipboard().setText("\n".join(self.model_.lines[r][1] for r in rows))
            return
        super().keyPressEvent(event)
