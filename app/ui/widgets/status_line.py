"""A view's one-line status: what it just did, or the sentence of what went wrong (detail on its tooltip)."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QLabel, QWidget

from app.core.quoting import clean
from app.ui import theme
from app.ui.widgets.error_panel import MESSAGE_LIMIT, describe_exception, plain_tooltip


class StatusLine(QLabel):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)  # sentences quote hosts and users: never markup
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.is_error = False

    def show_message(self, text: str) -> None:
        self.is_error = False
        self.setText(clean(text, MESSAGE_LIMIT))
        self.setToolTip("")
        self._tint()

    def show_error(self, message: str, detail: str = "") -> None:
        self.is_error = True
        self.setText(clean(message, MESSAGE_LIMIT))
        self.setToolTip(plain_tooltip(detail.strip()[-4000:] if detail.strip() else message))
        self._tint()

    def show_exception(self, exc: BaseException) -> tuple[str, str]:
        """Show the engine's sentence for ``exc``; returns (sentence, detail) for the app's error panel."""
        message, detail = describe_exception(exc)
        self.show_error(message, detail)
        return message, detail

    def _tint(self) -> None:
        pal = self.palette()
        parent = self.parentWidget()
        normal = (parent.palette() if parent else QPalette()).color(QPalette.ColorRole.WindowText)
        pal.setColor(QPalette.ColorRole.WindowText, theme.error_text_colour(pal) if self.is_error else normal)
        self.setPalette(pal)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and not getattr(self, "_tinting", False):
            self._tinting = True
            try:
                self._tint()
            finally:
                self._tinting = False
