"""The report's "Scaling across nodes" section: throughput, speed-up and weak-scaling efficiency by node count."""
from __future__ import annotations

from typing import Any

from app.core.numbers import usd
from app.reports import svg
from app.reports.blocks import Block, Chart, Heading, Table
from app.reports.wording import colours_of, num, times


def scaling_section(doc: dict[str, Any]) -> list[Block]:
    """Throughput, speed-up and weak-scaling efficiency per node count, as a table and a chart."""
    rows = doc.get("scaling") or []
    if not rows:
        return []

    def interval(ci: list[float] | None, percent: bool = False) -> str:
        if not ci:
            return ""
        return f" ({ci[0] * 100:.0f}–{ci[1] * 100:.0f}%)" if percent else f" ({num(ci[0])}–{num(ci[1])})"

    blocks: list[Block] = [Heading("Scaling across nodes")]
    table_rows = tuple(
        (r["label"], str(r["nodes"]), str(r["world_size"]), num(r["throughput"]) + interval(r["throughput_ci95"]),
         times(r["speedup"]), f"{r['efficiency'] * 100:.0f}%" + interval(r["efficiency_ci95"], percent=True),
         usd(r["usd_per_hour"]), usd(r["usd_per_1m"]))
        for r in rows)
    blocks.append(Table(("Setup", "Nodes", "Procs", "Throughput (95%)", "Speed-up", "Efficiency (95%)", "$/h",
                         "$ per 1M"), table_rows, (False,) + (True,) * 7,
                        caption="Weak scaling: the same batch per process on every node count; efficiency = "
                                "throughput_N / (N × throughput_1)",
                        notes=("Intervals: between repeats where a node count was repeated, else from the run's "
                               "own step times (the mean step's 95% interval: throughput is samples over wall "
                               "time).",
                               "$/h is every node's price together; $ per 1M samples at each node count.")))
    colours = colours_of(doc)
    series = []
    for family in dict.fromkeys(r["family"] for r in rows):
        mine = [r for r in rows if r["family"] == family]
        base = mine[0]
        series.append(svg.PointSeries(f"{family}: ideal", [(r["nodes"], base["throughput"] * r["nodes"] /
                                                            base["nodes"]) for r in mine], None, "#999999"))
        series.append(svg.PointSeries(f"{family}: measured", [(r["nodes"], r["throughput"]) for r in mine],
                                      [f"{r['efficiency'] * 100:.0f}%" for r in mine], colours.get(base["label"])))
    most = max(r["nodes"] for r in rows)
    blocks.append(Chart("Throughput by node count", svg.xy_chart(
        "Throughput by node count", series, "nodes", "samples/s", lines=False,
        x_ticks=list(range(0, most + 1))), 720, 320,
        "Measured throughput against ideal linear scaling; each measured point is labelled with its efficiency."))
    return blocks
