"""Python's cycle collector, run in the GUI thread only.

CPython collects cycles in whichever thread happens to allocate past a threshold. When that is one of
the bridge's worker threads (compare, history, probes: app.ui.bridge) and the garbage holds Qt objects
(a closed view's menus and actions), the worker runs ``~QObject`` — which takes Qt's lock and then
waits for the GIL — while the GUI thread, holding the GIL, deletes a widget and waits for that lock:
the app freezes. Seen here as a test that hung for minutes (py-spy: the "compare" worker in
``gc_collect_main`` → ``QObject::~QObject`` → ``GilState::acquire``, the main thread in
``QBasicMutex::lockInternal`` under ``runDeletionInMainThread``); a larger price book to parse made the
worker allocate enough to collect. pyqtgraph's GarbageCollector is the known cure: automatic collection
off, and the same generational thresholds checked by a timer in the GUI thread.
"""
from __future__ import annotations

from pyqtgraph.util.garbage_collector import GarbageCollector

_collector: GarbageCollector | None = None


def collect_garbage_on_gui_thread() -> GarbageCollector:
    """Start collecting on a GUI-thread timer (once per process; call it from the GUI thread)."""
    global _collector
    if _collector is None:
        _collector = GarbageCollector(interval=1.0)
    return _collector
