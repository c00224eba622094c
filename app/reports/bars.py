"""Bar series for the report's charts: one series per host, one bar per category (a batch size, a sweep point)."""
from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from app.reports import svg


def bar_series(groups: list[dict[str, Any]], categories: list[Hashable], category_of: Callable[[dict], Hashable],
               key: str, with_ci: bool, colours: dict[str, str]) -> list[svg.BarSeries]:
    """A series per host label: its groups' ``key`` per category, "not run" where it measured none."""
    labels = list(dict.fromkeys(g["label"] for g in groups))
    series = []
    for label in labels:
        mine = {category_of(g): g for g in groups if g["label"] == label}
        values = [mine[c][key] if c in mine else None for c in categories]
        intervals = [mine[c]["ci95"] if c in mine else None for c in categories] if with_ci else None
        host = next(iter(mine.values())).get("host_label", label)
        series.append(svg.BarSeries(label, values, intervals,
                                    ["N/A" if c in mine else "not run" for c in categories], colours.get(host)))
    return series


def has_values(series: list[svg.BarSeries]) -> bool:
    return any(v is not None for s in series for v in s.values)
