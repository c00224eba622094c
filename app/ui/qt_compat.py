"""A guard against PYSIDE-3474: PySide6 6.12.0 drops references to None and True on Python < 3.12.

Its wheels return some singletons without taking a reference: ``None`` from Qt
functions that return void (``setText``, ``resize``, ``setData``...) and ``True``
from ``Signal.emit``.  Each call lowers the singleton's reference count by one;
a live GUI makes thousands a second, and after a while CPython aborts with
"Fatal Python error: none_dealloc: deallocating None" (or ``bool_dealloc``).
Python 3.12 made these objects immortal, which is why the bug does not show
there.  pyproject.toml keeps 6.12.0 out on Python < 3.12; this guard covers an
environment that has it anyway.  It *measures* the leak rather than trusting
version numbers, and when it finds one it does what Python 3.12 does: gives
None, True and False a reference count no leak can drain.
"""
from __future__ import annotations

import ctypes
import gc
import sys

_PROBE_CALLS = 64
_HEADROOM = 1 << 60  # 2**60 leaked references: centuries at a million Qt calls a second


def _drained(singleton: object, call) -> bool:
    gc.collect()
    before = sys.getrefcount(singleton)
    for _ in range(_PROBE_CALLS):
        call()
    return sys.getrefcount(singleton) - before <= -_PROBE_CALLS // 2


def qt_leaks_singletons() -> bool:
    """True when a void Qt call drains None, or ``Signal.emit`` drains True."""
    from PySide6.QtCore import QByteArray, QObject, Signal

    class _Probe(QObject):
        ping = Signal()

    buffer, probe = QByteArray(b"x"), _Probe()
    return _drained(None, buffer.clear) or _drained(True, probe.ping.emit)


def keep_singletons_alive() -> bool:
    """Apply the guard if this Python and PySide6 need it; True when applied."""
    if sys.version_info >= (3, 12) or not qt_leaks_singletons():
        return False
    for singleton in (None, True, False):
        refcount = ctypes.c_ssize_t.from_address(id(singleton))  # ob_refcnt: the first field of every object
        refcount.value += _HEADROOM
    return True


GUARDED = keep_singletons_alive()
