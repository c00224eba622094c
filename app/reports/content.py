"""What a report says, in order: summary, results (a section per workload and model, with its charts), scaling,
utilisation over time, cost details, your job, methodology, runs.

Both the HTML and the PDF writer render these blocks, so they cannot drift apart.
"""
from __future__ import annotations

from typing import Any

from app.core.cost import type_from_label
from app.core.numbers import NA, usd
from app.reports import svg
from app.reports.blocks import Block, Bullets, Chart, Heading, Paragraph, Summary, Table
from app.reports.cost_sections import cost_details
from app.reports.job_section import job_section
from app.reports.llm_section import generate_section
from app.reports.scaling_section import scaling_section
from app.reports.serve_section import serve_section
from app.reports.throughput_section import throughput_section
from app.reports.wording import colours_of, join_values, measure_title, measures, short_model


def _results(doc: dict[str, Any]) -> list[Block]:
    """A section per measure (workload and model), each with its own columns and charts."""
    blocks: list[Block] = [Heading("Results")]
    for workload, model in measures(doc):
        blocks.append(Heading(measure_title(workload, model), level=3))
        if workload == "serve":
            blocks += serve_section(doc, model)
        elif workload == "generate":
            blocks += generate_section(doc, model)
        else:
            blocks += throughput_section(doc, workload, model)
    refs = {r["run_id"]: r["ref"] for r in doc["rows"]}
    bases = "; ".join(f"{measure_title(b['workload'], short_model(b['model']))}: {refs.get(b['run_id'])} "
                      f"({next(r['label'] for r in doc['rows'] if r['run_id'] == b['run_id'])})"
                      for b in doc.get("baselines") or [])
    notes = [f"Speed and work per dollar are relative to the baseline of each measure ({bases}); inference "
             "compares the same batch size. Run references (R1, …) are listed under Runs.",
             "N/A: not measured, or no price known (see Prices under Methodology). Never read N/A as zero."]
    runs = {r["run_id"]: r for r in doc["runs"]}
    notes += [f"{runs[p['run_id']]['ref'] if p['run_id'] in runs else p['run_id']} ({p['label']}) is partial: "
              + "; ".join(f"{f['point']} failed: {f['message'].rstrip('.')}" for f in p["failed"])
              + ". Its finished points are compared." for p in doc.get("partial") or []]
    blocks.append(Bullets(tuple(notes)))
    return blocks


def _utilisation(doc: dict[str, Any]) -> list[Block]:
    """One chart per metric (accelerator, host CPU), one line per run, at most a palette's worth per chart."""
    colours = colours_of(doc)
    by_metric: dict[str, list[svg.PointSeries]] = {}
    for run in doc["runs"]:
        for name, points in (run["telemetry"]["series"] or {}).items():
            metric = "Host CPU" if name == "host CPU" else "Accelerator utilisation"
            by_metric.setdefault(metric, []).append(
                svg.PointSeries(f"{run['ref']} {run['label']}" + ("" if metric == "Host CPU" else f" · {name}"),
                                svg.thin([tuple(p) for p in points]), colour=colours.get(run["label"])))
    heading = Heading("Utilisation over time", page_break=True)
    if not by_metric:
        return [heading, Paragraph("N/A — no telemetry samples were recorded for these runs.", "note")]
    sources = sorted({s for run in doc["runs"] for s in run["telemetry"]["sources"]})
    blocks: list[Block] = [heading]
    per_chart = len(svg.PALETTE)
    for metric in ("Accelerator utilisation", "Host CPU"):
        series = by_metric.get(metric, [])
        for start in range(0, len(series), per_chart):
            part = series[start:start + per_chart]
            suffix = f" ({start // per_chart + 1} of {-(-len(series) // per_chart)})" if len(series) > per_chart \
                else ""
            title = f"{metric} over time{suffix}"
            blocks.append(Chart(title, svg.xy_chart(title, part, "seconds since the run's first sample", "percent",
                                                    lines=True, y_max=100.0), 720, 300,
                                "Mean over the host's NeuronCores or GPUs (accelerator) or its CPUs, per time "
                                f"bucket; sources: {', '.join(sources)}. Gaps are samples that could not be read, "
                                "not zero."))
    return blocks


def _methodology(doc: dict[str, Any]) -> list[Block]:
    m = doc["methodology"]
    blocks: list[Block] = [Heading("Methodology", page_break=True)]
    items = []
    if m["train"]:
        warm = ", ".join(str(w) for w in m["warmup"]) or NA
        items.append(f"Training (timm model, random data, Adam; torchrun across cores): the first {warm} warm-up "
                     "step(s) and every step that compiled are left out; the steady window starts after both. "
                     "Throughput = samples in the steady window ÷ its wall time, timed after the device finished.")
    if m["infer"]:
        items.append("Inference: each batch size runs in a fresh process; the model is compiled/traced once "
                     f"(timed apart), warmed up, then measured until at least "
                     f"{join_values(m['min_iters'])} requests and "
                     f"{join_values(m['duration'])} s were reached. Percentiles come from every request; a p99 from "
                     "fewer than 100 requests is flagged. Throughput = completed samples ÷ wall time.")
    if m.get("generate"):
        items.append("Generate: each (batch, prompt tokens, new tokens) point runs in a fresh process; every call "
                     "must produce exactly N new tokens (EOS off), and a short one fails the point. The first call "
                     "(where static caches and graphs compile) is timed apart; warm-up calls follow, then timed "
                     "calls until the minimum count and duration. TTFT is the first new token's time, TPOT = "
                     "(E2E − TTFT)/(N − 1), output tok/s = B·N ÷ the median call's E2E.")
    if m.get("serve"):
        items.append("Serve: the agent starts the server (its load and first request kept apart, like a compile), "
                     "then runs closed-loop concurrency levels and, with an SLO, a seeded Poisson rate search. "
                     "Every streamed chunk is timestamped; failed, cut and short requests are errors. A level meets "
                     "the SLO only if every term holds and its error rate is at most the stated bound (1% unless "
                     "set); cost is quoted at the goodput point, the highest output tok/s meeting the SLO "
                     "(without an SLO: the highest measured, saturation).")
    if doc.get("partial"):
        items.append("A sweep with a failed point (e.g. out of memory at its largest batch) is kept as partial: its "
                     "finished points are compared and priced, the failed point is named with its sentence.")
    items.append("Compile handling: compile time never enters a throughput figure; it is shown with its own cost, "
                 "and whether the Neuron compile cache served it (cold vs cached).")
    counts: dict[str, int] = {}
    for g in doc["groups"]:
        counts[g["label"]] = max(counts.get(g["label"], 0), g["n"])
    reps = ", ".join(f"{label} {n}" for label, n in counts.items())
    items.append(f"Repeats (runs per host and setting, each in fresh processes): {reps}. With two or more, the "
                 "figure is the median with a bootstrap 95% interval (2,000 resamples); overlapping intervals are "
                 "reported as no significant difference. Single runs are compared without a significance claim.")
    items.append("Cost: usd_per_1m = usd_per_hour / 3600 / throughput × 1e6 (the formula of AWS's Neuron "
                 "benchmark tables); work per dollar = throughput × 3600 / usd_per_hour. Prices are looked up when "
                 "the report is made; a missing price is N/A, never 0.")
    if any(r.get("target_ci_pct") for r in doc["rows"]):
        items.append("Runs with a target (--target-ci PCT) measured until the 95% interval was within ±PCT %: "
                     "training, of the median steady step time (order-statistic interval, at least 30 steady steps, "
                     "--steps the cap); inference, of each batch size's throughput (batch means over 10 groups of "
                     "requests, at least --min-iters requests, --duration the cap). Why each stopped is listed "
                     "under its results.")
    items.append("MFU (model FLOPs utilisation) = FLOPs per sample × samples/s ÷ the dense peak of the devices "
                 "the run used, for the dtype its matmuls ran in. FLOPs are counted once per run by PyTorch's own "
                 "counter (torch.utils.flop_counter: matmuls, convolutions, attention) on the real input shapes: "
                 "forward + backward for training, forward for inference. Peaks: resources/peaks (vendor dense "
                 "figures, sourced and dated); no peak is known for a CPU, so its MFU is N/A.")
    items.append("Outliers are never dropped: steps beyond 3 interquartile ranges are kept and named in the "
                 "run's warnings below.")
    blocks.append(Bullets(tuple(items)))

    blocks.append(Heading("Environment", level=3))
    env_rows = []
    for run in doc["runs"]:
        fp = run["fingerprint"]
        env_rows.append((run["ref"], run["host"], fp.get("instance_type") or NA, fp.get("python") or NA,
                         fp.get("torch") or NA, fp.get("torch_xla") or NA, fp.get("torch_neuronx") or NA,
                         fp.get("neuronx_cc") or NA, fp.get("neuron_sdk") or NA))
    notes = ()
    if m["environment_differences"]:
        notes = ("Software differs between runs in: " + ", ".join(m["environment_differences"])
                 + ". Part of a difference in results may come from software, not hardware.",)
    blocks.append(Table(("Run", "Host", "Instance", "Python", "torch", "torch-xla", "torch-neuronx", "neuronx-cc",
                         "Neuron SDK"), tuple(env_rows), notes=notes))

    blocks.append(Heading("Prices", level=3))
    sources: list[str] = []
    price_rows = []
    for p in m["prices"]:
        label = f"{p['source']} — {p['date']}" if p["source"] else ""
        if label and label not in sources:
            sources.append(label)
        price_rows.append((p["instance_type"] or NA, p["region"] or NA, p["market"].replace("_", "-"),
                           usd(p["usd_per_hour"]), f"[{sources.index(label) + 1}]" if label else NA,
                           (p["note"] or "").split(" (per ")[0]))
    notes = tuple(f"[{i}] {label}" for i, label in enumerate(sources, 1)) + (
        "'snapshot date unknown': the shipped price book is a snapshot of a public catalog whose date could not be "
        "established; `neuronbench prices refresh` fetches current AWS prices and `neuronbench prices set` records "
        "your own.",)
    blocks.append(Table(("Instance", "Region", "Market", "$/h", "Source", "Note"), tuple(price_rows),
                        (False, False, False, True, False, False), notes=notes))
    warnings = [f"{run['label']} ({run['ref']}): {w}" for run in doc["runs"] for w in run["warnings"]]
    blocks.append(Heading("Warnings", level=3))
    blocks.append(Bullets(tuple(warnings)) if warnings else Paragraph("None of the runs reported a warning."))
    return blocks


def _instance(run: dict[str, Any]) -> str:
    """"instance trn1.2xlarge (declared after the run)": the type the run was priced as, and where it came from."""
    if not run.get("instance_type"):
        return "instance type unknown"
    return f"instance {run['instance_type']} ({type_from_label(run.get('instance_type_from'))})"


def _runs(doc: dict[str, Any]) -> list[Block]:
    """One line per run (a list, not a table: long spec lines wrap without splitting a table row across pages)."""
    items = tuple(f"{r['ref']} · {r['run_id']} · {r['host']} ({r['label']}) · {r['status']} · created "
                  f"{(r['created_at'] or NA).replace('T', ' ').replace('Z', ' UTC')} · {_instance(r)} · "
                  f"{r['telemetry']['buckets']} telemetry buckets — {r['spec_summary'] or NA}"
                  + "".join(f" · {f['point']} failed: {f['message']}" for f in r.get("failed_points") or [])
                  for r in doc["runs"])
    blocks: list[Block] = [Heading("Runs"), Bullets(items)]
    node_rows = [(r["ref"], str(n["index"]), str(n["host"]), n["instance_type"] or NA,
                  (f"{n['ranks'][0]}–{n['ranks'][-1]}" if n.get("ranks") else NA), str(n["status"]),
                  NA if n["util_mean_pct"] is None else f"{n['util_mean_pct']:.0f}%")
                 for r in doc["runs"] for n in r.get("nodes") or []]
    if node_rows:
        blocks.append(Table(("Run", "Node", "Host", "Instance", "Ranks", "Status", "Utilisation"), tuple(node_rows),
                            (False, True, False, False, True, False, True),
                            caption="Nodes of multi-node runs (node 0 reports the steps; each node its own telemetry)",
                            notes=("Utilisation: mean over the node's devices while measuring; on a CPU host, "
                                   "its CPUs.",)))
    if doc.get("skipped"):
        blocks.append(Bullets(tuple(f"{s['run_id']} on {s['host']} left out: {s['reason']}"
                                    for s in doc["skipped"])))
    return blocks


def build_blocks(doc: dict[str, Any]) -> list[Block]:
    """Every block of the report, in reading order."""
    meta = (f"Generated {doc['generated_at'].replace('T', ' ').replace('Z', ' UTC')} by {doc['generator']} · "
            f"baseline run {doc['baseline']} · {doc['market'].replace('_', '-')} prices")
    blocks: list[Block] = [Paragraph(meta, "meta"),
                           Summary(tuple(doc["summary"]) or ("Nothing to compare: no run has a result.",))]
    blocks += _results(doc)
    blocks += scaling_section(doc)
    blocks += _utilisation(doc)
    blocks += cost_details(doc)
    blocks += job_section(doc)
    blocks += _methodology(doc)
    blocks += _runs(doc)
    return blocks
