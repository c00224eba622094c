"""The report's "Compile time and cost" section: compile cost, what launched benchmarks cost, cold against
cached compiles, break-even, the training budget and the options against a target."""
from __future__ import annotations

from typing import Any

from app.core.numbers import NA, usd
from app.reports.blocks import Block, Bullets, Heading, Table
from app.reports.wording import measure_title, measures, num, shape_cell, short_model


def cost_details(doc: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [Heading("Compile time and cost")]
    rows = []
    for r in doc["rows"]:
        rows.append((r["label"], r["ref"] or "", shape_cell(r), num(r["compile_s"], ".1f"),
                     usd(r["compile_usd"]), r.get("compile_cache") or NA))
    blocks.append(Table(("Host", "Run", "Shape", "Compile or load s", "Compile $", "Compile cache"), tuple(rows),
                        (False, False, True, True, True, False),
                        notes=("Shape: batch (× sequence length); generate: batch · prompt/new tokens; serve: "
                               "prompt/new tokens at the operating load, whose figure is the server's load time. "
                               "Compile time is kept out of every throughput figure and costed apart. Compile "
                               "cache: cold (the compiler ran), cached (Neuron logged 'Using a cached neff'), "
                               "N/A (no compiler messages: an eager backend, or logs not captured).",)))
    blocks += benchmark_costs(doc)
    items = cold_vs_cached(doc)
    items += [f"{e['cheaper_after']} costs less than {e['than']} in total once a job runs more than "
              f"{e['samples']:,.0f} samples: its higher compile cost is paid back by a lower cost per sample."
              for e in doc.get("break_even") or []]
    if items:
        blocks.append(Bullets(tuple(items)))
    if doc.get("budget"):
        brows = tuple((b["label"], f"{b['epochs']:g} × {b['samples_per_epoch']:,}", num(b["train_hours"], ".3g"),
                       usd(b["train_usd"]), usd(b["compile_usd"]), num(b["total_hours"], ".3g"), usd(b["total_usd"]))
                      for b in doc["budget"])
        blocks.append(Table(("Host", "Epochs × samples", "Train h", "Train $", "Compile $", "Total h", "Total $"),
                            brows, (False, True, True, True, True, True, True), caption="Training budget",
                            notes=("Compile counted once, at the longest compile measured for the host (a new "
                                   "instance starts with a cold compile cache).",)))
    choice = doc.get("choice")
    if choice:
        target = " and ".join(t for t in (
            f"p99 ≤ {choice['max_p99_ms']:g} ms" if choice["max_p99_ms"] is not None else "",
            f"throughput ≥ {choice['min_throughput']:g}/s" if choice["min_throughput"] is not None else "") if t)
        crows = [(c["label"], "meets", num(c["throughput"]), num(c["p99_ms"], ".3g"), usd(c["usd_per_hour"]),
                  usd(c["usd_per_1m"])) for c in choice["meeting"]]
        crows += [(c["label"], c["reason"], num(c["throughput"]), num(c["p99_ms"], ".3g"), usd(c["usd_per_hour"]),
                   usd(c["usd_per_1m"])) for c in choice["rejected"]]
        blocks.append(Table(("Option", "Against the target", "Throughput", "p99 ms", "$/h", "$ per 1M"), tuple(crows),
                            (False, False, True, True, True, True),
                            caption=f"Options against the target {target}, cheapest first"))
    return blocks


def benchmark_costs(doc: dict[str, Any]) -> list[Block]:
    """What each priced benchmark itself cost: launch to terminate on an instance NeuronBench launched,
    the run's start to end on any other host."""
    priced = {r["run_id"]: r for r in doc["rows"] if r.get("instance_id") or r.get("benchmark_usd") is not None}
    if not priced:
        return []
    rows = tuple((r["label"], r.get("ref") or "", r["instance_id"] or "not launched by NeuronBench",
                  "launch to terminate" if r["instance_id"] else "run start to end", num(r["benchmark_s"], ".0f"),
                  usd(r["benchmark_usd"])) for r in priced.values())
    return [Table(("Host", "Run", "Instance", "Measured", "Seconds", "Benchmark $"), rows,
                  (False, False, False, False, True, True), caption="What the benchmarks cost",
                  notes=("Instances NeuronBench launched: the time from launch to terminate at the instance's "
                         "price, boot, deploy and compile included. Other priced hosts: the run's wall time from "
                         "its start to its end (setup and compile included) at the current price.",))]


def cold_vs_cached(doc: dict[str, Any]) -> list[str]:
    """"trn1.2xlarge: cold compile 1840 s ($0.69); cached 14 s ($0.0052)" where both were measured."""
    items = []
    for workload, model in measures(doc):
        for label in dict.fromkeys(r["label"] for r in doc["rows"]):
            rows = [r for r in doc["rows"] if r["label"] == label and (r["workload"], r["model"]) == (workload, model)
                    and r["compile_s"] is not None]
            by_state = {state: [r for r in rows if r.get("compile_cache") == state] for state in ("cold", "cached")}
            if not by_state["cold"] or not by_state["cached"]:
                continue
            parts = []
            for state, chosen in by_state.items():
                seconds = sorted(r["compile_s"] for r in chosen)[len(chosen) // 2]
                cost = next(r["compile_usd"] for r in chosen if r["compile_s"] == seconds)
                parts.append(f"{state} {seconds:,.1f} s ({usd(cost)})")
            items.append(f"{label}, {measure_title(workload, short_model(model))}: compile " + "; ".join(parts) + ".")
    return items
