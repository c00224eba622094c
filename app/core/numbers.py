"""Numbers as the views and reports print them: four significant digits, never in e-notation (13,470 not 1.347e+04)."""
from __future__ import annotations

NA = "N/A"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``1 event``, ``0 events``, ``12000 events``: a count with its noun in the number it needs."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def figure(value: float | None, digits: int = 4) -> str:
    """``value`` to ``digits`` significant digits; large values in full with thousands separators."""
    if value is None:
        return NA
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def usd(value: float | None) -> str:
    return NA if value is None else f"${figure(value)}"
