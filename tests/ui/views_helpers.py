"""Fixtures for the views' tests: a bridge per test, views closed (threads joined) before the leak check."""
from __future__ import annotations

import pytest
import shiboken6

from app.ui.bridge import Bridge


@pytest.fixture
def bridge(no_leaks):
    bridge = Bridge()
    yield bridge
    assert bridge.shutdown() == []
    bridge.deleteLater()


@pytest.fixture
def show(no_leaks, qtbot):
    """Show a view at a given size; closed before the leak check."""
    shown = []

    def show_(widget, size=(1200, 700)):
        widget.resize(*size)
        widget.show()
        qtbot.waitExposed(widget)
        shown.append(widget)
        return widget

    yield show_
    for widget in shown:
        if shiboken6.isValid(widget):
            widget.close()
            widget.deleteLater()
