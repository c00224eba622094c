"""Cycles are collected in the GUI thread, never in a worker (app.ui.gc_on_gui_thread).

A worker that collected a cycle holding Qt objects deadlocked the app with its GUI thread; here a cycle's
finaliser records the thread that collected it while a worker thread allocates far past the collector's
threshold, as the compare worker does parsing the price book.
"""
from __future__ import annotations

import gc
import threading


class _Sentinel:
    def __init__(self, seen: list[str]) -> None:
        self.seen = seen
        self.cycle = self

    def __del__(self) -> None:
        self.seen.append(threading.current_thread().name)


def test_a_worker_that_allocates_never_collects_a_cycle_the_gui_thread_collects_it(qtbot):
    assert not gc.isenabled()  # automatic collection is off: the GUI thread's timer collects
    seen: list[str] = []
    _Sentinel(seen)  # unreachable at once, but only a cycle collection frees it

    kept: list = []

    def allocate() -> None:
        # Hundreds of times the youngest generation's threshold, kept alive (as a parsed price book is).
        kept.append([[i] for i in range(200_000)])

    worker = threading.Thread(target=allocate, name="worker")
    worker.start()
    worker.join()
    assert seen == []
    qtbot.waitUntil(lambda: seen == ["MainThread"], timeout=5_000)
