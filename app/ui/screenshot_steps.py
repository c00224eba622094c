"""What every screenshot does while it waits: run the event loop until something holds, let redraws settle,
press Run and wait for the runs to end.

Below ``app.ui.screenshots`` and its mixins (``app.ui.screenshot_models``), which both use it, so neither
needs to import the other's module.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtTest import QTest

if TYPE_CHECKING:  # a type only: the window module is above this one
    from app.ui.main_window import MainWindow


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"screenshots: gave up waiting for {what} after {timeout:.0f} s")
        QTest.qWait(25)


def settle(ms: int = 300) -> None:
    """Let the redraw timer tick and layouts settle before grabbing."""
    QTest.qWait(ms)


def run_from_button(window: MainWindow, timeout: float = 180) -> None:
    wait_until(lambda: window.run_button.isEnabled(), 30, "the Run button")
    window.run_button.click()
    wait_until(lambda: bool(window.runs.views) and not window.runs.active_views(), timeout, "the run to finish")
