"""A run's log: agent messages, the workload's stderr (compiler and runtime text) and errors, as they come."""
from __future__ import annotations

import html
from collections.abc import Iterable

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from app.ui import theme

MAX_BLOCKS = 5_000  # older lines scroll out; the whole stderr stays in the run directory on the host


class LogPane(QPlainTextEdit):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setMaximumBlockCount(MAX_BLOCKS)
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setPlaceholderText("The agent's messages and the workload's output appear here.")
        self.lines_shown = 0

    def add(self, lines: Iterable[tuple[float, str, str]]) -> None:
        """Append ``(t, level, message)`` lines; keeps the view at the bottom if it was there."""
        bar = self.verticalScrollBar()
        at_bottom = bar.value() >= bar.maximum() - 2
        for t, level, message in lines:
            prefix = f"{t:8.2f}s {level:<7} "
            if level in ("error", "warning"):
                colour = theme.error_text_colour(self.palette()).name()
                self.appendHtml(f'<span style="color:{colour}; white-space:pre">'
                                f"{html.escape(prefix + message)}</span>")
            else:
                self.appendPlainText(prefix + message)
            self.lines_shown += 1
        if at_bottom:
            bar.setValue(bar.maximum())
