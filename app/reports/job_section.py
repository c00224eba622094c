"""The report's "Your job" section: the user's whole job on every host, cold and warm compile, on-demand and spot."""
from __future__ import annotations

from typing import Any

from app.core.numbers import NA
from app.reports.blocks import Block, Bullets, Heading, Table
from app.reports.wording import measure_title, num, short_model


def _usd(value: float | None) -> str:
    return NA if value is None else f"${value:,.2f}"


def job_section(doc: dict[str, Any]) -> list[Block]:
    """One table per sized workload and model (medians of repeats), then why any figure is N/A."""
    block = doc.get("job")
    if not block:
        return []
    blocks: list[Block] = [Heading("Your job")]
    reasons: dict[str, list[str]] = {}
    for workload, what in block["describe"].items():
        models = dict.fromkeys(g["model"] for g in doc["groups"] if g["workload"] == workload and g.get("job"))
        for model in models:
            rows = []
            for g in doc["groups"]:
                job = g.get("job")
                if g["workload"] != workload or g["model"] != model or not job:
                    continue
                rows.append((g["label"], str(g["batch_size"]), num(g["throughput"]), num(job["hours_cold"], ".3g"),
                             num(job["hours_warm"], ".3g"), _usd(job["usd_on_demand_cold"]),
                             _usd(job["usd_on_demand_warm"]), _usd(job["usd_spot_cold"]), _usd(job["usd_spot_warm"])))
                where = g["label"] + (f" batch {g['batch_size']}" if workload == "infer" else "")
                for start in ("cold", "warm"):
                    if job[f"compile_{start}_s"] is None:
                        reasons.setdefault(f"{start.capitalize()} N/A: {job[f'compile_{start}_basis']}",
                                           []).append(where)
            blocks.append(Table(("Host", "Batch", "Per second", "Hours cold", "Hours warm", "On-demand $ cold",
                                 "On-demand $ warm", "Spot $ cold", "Spot $ warm"), tuple(rows),
                                (False,) + (True,) * 8,
                                caption=f"{measure_title(workload, short_model(model))}: {what}"))
    notes = ["Hours = the job's samples (or requests, one inference each) / the measured throughput, plus one "
             "compile. Cold: the compile measured with the compiler running (a new instance); warm: the compile "
             "measured when the Neuron compile cache held every graph. Dollars: those hours x the price of the "
             "run's machines (every node of a multi-node run)."]
    notes += [f"{why} ({', '.join(dict.fromkeys(where))})." for why, where in reasons.items()]
    blocks.append(Bullets(tuple(notes)))
    return blocks
