"""Unix times as the CLI, the views and the reports print them, and never an exception for a time.

A time comes from an event's ``t`` (protocol v1 holds it to 1970..2100) or from a store written by an
older version, which took any finite number: ``time.localtime(1e300)`` raises OverflowError, and
``datetime.fromtimestamp`` ValueError past the year 9999.  Every reader that shows a time of day goes
through here, so a time no clock can show is N/A, never the end of a progress line or a command.
"""
from __future__ import annotations

import datetime as _dt
import math
import time

from app.core.numbers import NA


def _usable(seconds: object) -> bool:
    return (type(seconds) is int or type(seconds) is float) and math.isfinite(seconds)


def local_time_text(seconds: float | None, fmt: str = "%Y-%m-%d %H:%M", missing: str = NA) -> str:
    """``seconds`` as this computer's local time in ``fmt``; ``missing`` when None or no clock shows it."""
    if not _usable(seconds):
        return missing
    try:
        return time.strftime(fmt, time.localtime(seconds))
    except (OverflowError, OSError, ValueError):
        return missing


def utc_iso(seconds: float | None) -> str | None:
    """``2026-11-28T11:03:13Z``; None when None or no calendar holds it."""
    if not _usable(seconds):
        return None
    try:
        return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return None
