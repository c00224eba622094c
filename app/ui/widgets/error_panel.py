"""Errors shown in one place: the engine's sentence, and its evidence behind a "Details" expander."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QPalette
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import NeuronBenchError
from app.core.quoting import clean, clean_block
from app.ui import theme

MAX_ENTRIES = 5
MESSAGE_LIMIT = 2_000  # characters of one sentence; the evidence behind "Details" keeps the rest


class ErrorEntry(QFrame):
    """One error: a title, the sentence to act on, and the detail (traceback, stderr tail) on demand."""

    dismissed = Signal(object)

    def __init__(self, title: str, message: str, detail: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        icon = QLabel()
        size = self.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize)
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxCritical).pixmap(size, size))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        self.title = QLabel(f"<b>{html.escape(clean(title))}</b>")
        # The engine's sentence quotes hosts and users: plain text (never markup), control characters escaped.
        self.message = QLabel(clean(message, MESSAGE_LIMIT))
        self.message.setTextFormat(Qt.TextFormat.PlainText)
        self.message.setWordWrap(True)
        self.message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.message.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        # Height for its actual width (a wrapped label's default minimum assumes a narrow one).
        policy = QSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.message.setSizePolicy(policy)
        self.details_button = QToolButton()
        self.details_button.setText("Details")
        self.details_button.setCheckable(True)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details_button.setVisible(bool(detail.strip()))
        dismiss = QPushButton("Dismiss")
        dismiss.setAutoDefault(False)
        self.details = QPlainTextEdit(clean_block(detail))
        self.details.setReadOnly(True)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.details.setMaximumHeight(220)
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.details.hide()

        head = QHBoxLayout()
        head.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        text = QVBoxLayout()
        text.setSpacing(2)
        text.addWidget(self.title)
        text.addWidget(self.message)
        text.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignLeft)
        head.addLayout(text, 1)
        head.addWidget(dismiss, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.addLayout(head)
        layout.addWidget(self.details)

        self.details_button.toggled.connect(self._toggle_details)
        dismiss.clicked.connect(self._dismiss)
        self._tint()

    def _toggle_details(self, shown: bool) -> None:
        self.details.setVisible(shown)
        self.details_button.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)

    def _dismiss(self) -> None:
        self.dismissed.emit(self)

    def _tint(self) -> None:
        pal = self.message.palette()
        pal.setColor(QPalette.ColorRole.WindowText, theme.error_text_colour(self.palette()))
        self.message.setPalette(pal)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and hasattr(self, "message"):
            self._tint()


def plain_tooltip(text: str) -> str:
    """A tooltip that shows ``text`` as it is: Qt takes a tooltip with a tag in it as markup, so it is quoted."""
    return f"<p style='white-space:pre-wrap'>{html.escape(clean_block(text))}</p>"


def describe_exception(exc: BaseException) -> tuple[str, str]:
    """(sentence, detail) for any exception: ours carry both; anything else is a bug, shown with its traceback."""
    if isinstance(exc, NeuronBenchError):
        return str(exc), exc.detail
    import traceback

    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return f"internal error: {type(exc).__name__}: {exc} (please report it with the details)", detail


class ErrorPanel(QWidget):
    """The app's one place for errors; hidden while there are none.  The newest comes first."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._layout = QVBoxLayout(self)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self.entries: list[ErrorEntry] = []
        self.hide()

    def show_error(self, title: str, message: str, detail: str = "") -> ErrorEntry:
        entry = ErrorEntry(title, message, detail, self)
        entry.dismissed.connect(self._remove)
        self._layout.insertWidget(0, entry)
        self.entries.insert(0, entry)
        while len(self.entries) > MAX_ENTRIES:
            self._remove(self.entries[-1])
        self.show()
        return entry

    def show_exception(self, title: str, exc: BaseException) -> ErrorEntry:
        message, detail = describe_exception(exc)
        return self.show_error(title, message, detail)

    def clear(self) -> None:
        for entry in list(self.entries):
            self._remove(entry)

    def _remove(self, entry: ErrorEntry) -> None:
        if entry in self.entries:
            self.entries.remove(entry)
        self._layout.removeWidget(entry)
        entry.deleteLater()
        self.setVisible(bool(self.entries))
