"""Declaring a stored run's instance type after the run, checked against the price book.

A run on a machine that did not report its type (not EC2, IMDS blocked) has no
price; ``neuronbench runs set RUN --instance-type T`` and History's "Declare
instance type…" give it one.  Both check what was typed here, with the same
sentences: a type the price book does not know is refused with the close
matches it does know, and a region where the type has no price with the
regions where it has one.
"""
from __future__ import annotations

import difflib
import time
from typing import Any

from app.core.cost import TYPE_FROM_AFTER_RUN
from app.core.errors import BadSpecError
from app.core.pricebook import ANY_REGION, TYPE_NAME, PriceBook
from app.core.quoting import quoted

MAX_SUGGESTIONS = 4


def close_types(book: PriceBook, typed: str) -> list[str]:
    """Types of the price book close to ``typed``: same prefix first ("inf2" → inf2.*), then similar spelling."""
    known = book.instance_types()
    needle = typed.strip().lower()
    prefixed = [t for t in known if needle and t.lower().startswith(needle)]
    similar = difflib.get_close_matches(needle, [t.lower() for t in known], n=MAX_SUGGESTIONS, cutoff=0.6)
    by_lower = {t.lower(): t for t in known}
    found = list(dict.fromkeys(prefixed + [by_lower[s] for s in similar]))
    return found[:MAX_SUGGESTIONS]


def _or_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def declaration_problem(book: PriceBook, instance_type: str, region: str | None = None) -> str | None:
    """The sentence that refuses this declaration, or None when the price book can price it."""
    itype = instance_type.strip()
    region = (region or "").strip()
    if not itype:
        return "name the instance type the run ran on (e.g. inf2.xlarge)"
    known = {t.lower(): t for t in book.instance_types()}
    if itype.lower() not in known:
        near = close_types(book, itype)
        hint = f"did you mean {_or_list(near)}?" if near else "`neuronbench prices list` shows the types it knows;"
        typed = itype if TYPE_NAME.match(itype) else "TYPE"  # a command to copy: only a name is quoted in it
        return (f"{quoted(itype)} is not an instance type in the price book: {hint} (`neuronbench prices set {typed} "
                f"USD_PER_HOUR` adds one of your own)")
    itype = known[itype.lower()]
    if region:
        regions = book.regions_of(itype)
        holds_everywhere = any(book.entry(itype, ANY_REGION, market) for market in ("on_demand", "spot"))
        if regions and region not in regions and not holds_everywhere:
            return f"{itype} has no price in {quoted(region)}: the price book lists it in {', '.join(regions)}"
    return None


def checked_declaration(book: PriceBook, instance_type: str, region: str | None = None) -> tuple[str, str | None]:
    """(instance type as the price book spells it, region or None); BadSpecError with the sentence otherwise."""
    problem = declaration_problem(book, instance_type, region)
    if problem:
        raise BadSpecError(problem)
    known = {t.lower(): t for t in book.instance_types()}
    return known[instance_type.strip().lower()], (region or "").strip() or None


def declaration(instance_type: str, region: str | None, at: float | None = None) -> dict[str, Any]:
    """What the run store keeps in ``declared_json``: the type, the region, that it came after the run, and when."""
    return {"instance_type": instance_type, "region": region, "source": TYPE_FROM_AFTER_RUN,
            "declared_at": time.time() if at is None else at}
