"""A long GUI session cannot drain None or True (PySide6 6.12.0 on Python < 3.12, PYSIDE-3474)."""
from __future__ import annotations

import sys

from PySide6.QtCore import QByteArray, QObject, Signal

from app.ui import qt_compat


class _Pinger(QObject):
    ping = Signal()


def test_a_million_qt_calls_leave_none_and_true_alive():
    # Without the guard, on an affected build these calls take a million references from None and True:
    # their counts (thousands) would hit zero and CPython would abort ("deallocating None").
    buffer, pinger = QByteArray(b"x"), _Pinger()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)
    for _ in range(500_000):
        buffer.clear()
        pinger.ping.emit()
    if qt_compat.GUARDED:
        assert sys.getrefcount(None) > 1 << 59 and sys.getrefcount(True) > 1 << 59
    else:  # an unaffected build (fixed PySide6, or Python >= 3.12): nothing is drained at all
        assert sys.getrefcount(None) >= none_before - 100 and sys.getrefcount(True) >= true_before - 100
