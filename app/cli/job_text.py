"""``compare … --job-samples N / --job-requests N``: the user's whole job per host, as terminal text."""
from __future__ import annotations

from typing import Any

from app.core.numbers import NA, figure


def _usd(value: float | None) -> str:
    return NA if value is None else f"${value:,.2f}"


def _hours(value: float | None) -> str:
    return figure(value, 3)


def format_job(doc: dict[str, Any]) -> list[str]:
    """A table per sized workload (one row per host and batch size, medians of repeats), then why a figure is N/A."""
    block = doc.get("job")
    if not block:
        return []
    out = []
    for workload, what in block["describe"].items():
        groups = [g for g in doc["groups"] if g["workload"] == workload and g.get("job")]
        out.append(f"\nyour job: {what}, compile counted once (cold: a new instance; warm: the compile cache "
                   "already holds the graphs)")
        rows = [("HOST", "BATCH", "HOURS COLD", "HOURS WARM", "ON-DEMAND COLD", "ON-DEMAND WARM", "SPOT COLD",
                 "SPOT WARM")]
        notes: dict[str, list[str]] = {}  # why a figure is N/A -> the settings it holds for
        for g in groups:
            job = g["job"]
            batch = str(g["batch_size"]) + (f", {g.get('input_len')} in / {g.get('output_len')} out"
                                            if workload == "generate" else "")
            rows.append((g["label"], batch, _hours(job["hours_cold"]), _hours(job["hours_warm"]),
                         _usd(job["usd_on_demand_cold"]), _usd(job["usd_on_demand_warm"]),
                         _usd(job["usd_spot_cold"]), _usd(job["usd_spot_warm"])))
            where = g["label"] + (f" batch {g['batch_size']}" if workload == "infer" else "")
            for start in ("cold", "warm"):
                if job[f"compile_{start}_s"] is None:
                    notes.setdefault(f"{start} N/A: {job[f'compile_{start}_basis']}", []).append(where)
            for market in ("on_demand", "spot"):
                if job[f"usd_per_hour_{market}"] is None:
                    notes.setdefault(f"{market.replace('_', '-')} N/A: no price", []).append(where)
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        out += ["  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                          for i, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip() for r in rows]
        out += [f"  {why} ({', '.join(dict.fromkeys(labels))})" for why, labels in notes.items()]
    return out
