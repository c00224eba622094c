"""Events an agent sent that protocol v1 refused: counted, the first reasons kept, shown without flooding.

``protocol.decode`` refuses a line that does not fit its type's schema; the stream goes on past it
(the events after it are stored as usual).  One ``RefusedEvents`` per run counts them for the
Result's ``events_refused`` block and says, for the progress line and the live view's log, when a
refusal is worth a line: the first few with their reason, then every tenth power, so that a host
sending garbage for an hour costs a handful of lines, not a million.
"""
from __future__ import annotations

from typing import Any

from app.core.quoting import clean

KEEP_REASONS = 5      # reasons kept in the Result
SHOW_FIRST = 3        # refusals shown one by one, with their reason


class RefusedEvents:
    def __init__(self) -> None:
        self.count = 0
        self.reasons: list[str] = []

    def add(self, reason: str) -> None:
        self.count += 1
        if len(self.reasons) < KEEP_REASONS:
            self.reasons.append(clean(reason, 300))

    def sentence(self, host: str) -> str | None:
        """What to say about the latest refusal (None: nothing, this one is counted silently)."""
        if self.count <= SHOW_FIRST:
            return (f"refused an event from {clean(host)}: {self.reasons[-1] if self.count <= KEEP_REASONS else ''}"
                    f" (the run goes on; {self.count} refused so far)")
        if _power_of_ten(self.count):
            return f"{self.count:,} events from {clean(host)} refused so far (the run goes on; the Result counts them)"
        return None

    def summary(self) -> str:
        """``3 events refused (first: step event #12: dt_s must be a number ≥ 0, got 'x')``."""
        first = f" (first: {self.reasons[0]})" if self.reasons else ""
        return f"{self.count:,} event{'s' if self.count != 1 else ''} from the agent refused{first}"

    def to_dict(self) -> dict[str, Any]:
        """The Result's ``events_refused`` block."""
        return {"count": self.count, "reasons": list(self.reasons)}


def _power_of_ten(n: int) -> bool:
    while n >= 10 and n % 10 == 0:
        n //= 10
    return n == 1


def merged(blocks: list[tuple[str, dict[str, Any] | None]]) -> dict[str, Any] | None:
    """One ``events_refused`` block from several streams' (a multi-node run's nodes), reasons named by node."""
    count, reasons = 0, []
    for label, block in blocks:
        if block and block.get("count"):
            count += int(block["count"])
            reasons += [f"{label}: {reason}" for reason in block.get("reasons") or []]
    return {"count": count, "reasons": reasons[:KEEP_REASONS]} if count else None
