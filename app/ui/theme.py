"""Colours derived from the system palette, so the app reads well in light and dark mode alike.

Nothing here hard-codes a background or text colour: those come from the
palette.  Series colours are a colour-blind-safe set (Okabe-Ito) whose
lightness is shifted towards the text colour when the background is dark.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QApplication

# Okabe & Ito (2008): distinguishable with every common colour-vision deficiency.
_SERIES = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442")
_PHASES = {"compile": "#D55E00", "warmup": "#E69F00", "measure": "#009E73", "setup": "#999999",
           "teardown": "#999999"}
STATUS = {"ok": "#009E73", "running": "#0072B2", "failed": "#D55E00", "unknown": "#999999", "partial": "#E69F00",
          "probing": "#E69F00", "cancelled": "#999999", "detached": "#56B4E9"}


def palette() -> QPalette:
    app = QApplication.instance()
    return app.palette() if isinstance(app, QApplication) else QPalette()


def is_dark(pal: QPalette | None = None) -> bool:
    """True when the window background is darker than its text."""
    pal = pal or palette()
    return pal.color(QPalette.ColorRole.Window).lightness() < pal.color(QPalette.ColorRole.WindowText).lightness()


def _for_background(hex_colour: str, dark: bool) -> QColor:
    colour = QColor(hex_colour)
    return colour.lighter(135) if dark else colour


def series_colour(index: int, pal: QPalette | None = None) -> QColor:
    return _for_background(_SERIES[index % len(_SERIES)], is_dark(pal))


def phase_colour(name: str, alpha: int = 70, pal: QPalette | None = None) -> QColor:
    colour = _for_background(_PHASES.get(name, "#999999"), is_dark(pal))
    colour.setAlpha(alpha)
    return colour


def phase_brushes(alpha: int, pal: QPalette | None = None) -> dict[str, QBrush]:
    """One brush per phase name (built once per palette, not once per span per redraw)."""
    return {name: QBrush(phase_colour(name, alpha, pal)) for name in (*_PHASES, "")}


def status_colour(status: str, pal: QPalette | None = None) -> QColor:
    return _for_background(STATUS.get(status, STATUS["unknown"]), is_dark(pal))


def error_text_colour(pal: QPalette | None = None) -> QColor:
    """A red that keeps its contrast on the palette's background."""
    return QColor("#FF8A80") if is_dark(pal) else QColor("#B00020")


def plot_background(pal: QPalette | None = None) -> QColor:
    return (pal or palette()).color(QPalette.ColorRole.Base)


def plot_foreground(pal: QPalette | None = None) -> QColor:
    return (pal or palette()).color(QPalette.ColorRole.Text)


def status_dot(status: str, pal: QPalette | None = None, size: int = 12) -> QPixmap:
    """A filled dot in the status colour, drawn at the screen's pixel ratio (sharp on high-DPI screens)."""
    app = QApplication.instance()
    ratio = app.devicePixelRatio() if isinstance(app, QApplication) else 1.0
    pixmap = QPixmap(int(size * ratio), int(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setBrush(status_colour(status, pal))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.drawEllipse(1, 1, size - 2, size - 2)
    painter.end()
    return pixmap


def tint_error(label) -> None:
    """Colour a label's text as an error, for the current palette (light or dark)."""
    pal = label.palette()
    pal.setColor(QPalette.ColorRole.WindowText, error_text_colour(pal))
    label.setPalette(pal)
