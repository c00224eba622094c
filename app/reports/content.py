"""What a report says, in order: summary, results, charts, cost details, methodology, runs.

Both the HTML and the PDF writer render these blocks, so they cannot drift apart.
"""
from __future__ import annotations

from typing import Any

from app.core.compare import WORK
from app.core.cost import type_from_label
from app.core.mfu import mfu_text
from app.core.model_text import check_mark_of
from app.core.numbers import NA, usd
from app.reports import svg
from app.reports.blocks import Block, Bullets, Chart, Heading, Paragraph, Summary, Table
from app.reports.cost_sections import cost_details
from app.reports.efficiency import mfu_sentences, stop_sentences
from app.reports.job_section import job_section
from app.reports.llm_section import llm_results
from app.reports.scaling_section import scaling_section
from app.reports.wording import colours_of, join_values, measure_title, measures, num, short_model, times

UNIT_LABEL = {"train": "samples/s", "infer": "inferences/s", "generate": "output tokens/s"}


def _results(doc: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [Heading("Results")]
    rough = False
    wrong = False
    for workload, model in measures(doc):
        if workload in ("generate", "serve"):
            blocks += llm_results(doc, workload, model)
            continue
        rows = []
        train = workload == "train"
        members = [r for r in doc["rows"] if (r["workload"], r["model"]) == (workload, model)]
        # Text models: the sequence length is a dimension of the measure, tokens/s a figure of it.
        seq = any(r.get("seq_len") is not None for r in members)
        tokens = any(r.get("tokens_per_s") for r in members)
        checked = any(r.get("check_agrees") is not None or r.get("check_finite") is not None for r in members)
        # MFU only where a peak is known somewhere in the measure (the sentences below say why it is N/A).
        mfu = any(r.get("mfu") is not None for r in members)
        # neuron-monitor's own FLOP/s beside ours: only where some run of the measure ran under it (Neuron).
        monitor = any(r.get("monitor_tflops") is not None for r in members)
        # One run in the measure is its own baseline: speed and work per $ would read 1.00× on every row.
        relative = len({r["run_id"] for r in members}) > 1
        for r in members:
            p99 = num(r["latency_p99_ms"], ".3g")
            if r["p99_reliable"] is False:
                p99 += "*"
                rough = True
            latency = () if train else (num(r["latency_p50_ms"], ".3g"), p99)
            mark = check_mark_of(r.get("check_agrees"), r.get("check_finite"),
                                 r.get("check_agrees") is not None or r.get("check_finite") is not None)
            wrong = wrong or mark in ("WRONG", "NaN")
            shape = str(r["batch_size"]) + (f" × {num(r.get('seq_len'), 'd')}" if seq else "")
            rows.append((r["label"], r["ref"] or "", shape, num(r["throughput"]),
                         *((num(r.get("tokens_per_s")),) if tokens else ()), *latency,
                         usd(r["usd_per_hour"]), usd(r["usd_per_1m"]),
                         *((usd(r.get("usd_per_1m_tokens")),) if tokens else ()),
                         *((times(r["speedup_vs_baseline"]), times(r["price_performance_vs_baseline"]))
                           if relative else ()),
                         *((mfu_text(r.get("mfu")),) if mfu else ()),
                         *((num(r.get("monitor_tflops")),) if monitor else ()), *((mark,) if checked else ())))
        unit = UNIT_LABEL[workload]
        header = ("Host", "Run", "Batch × seq" if seq else "Batch", "Throughput",
                  *(("Tokens/s",) if tokens else ()), *(() if train else ("p50 ms", "p99 ms")), "$/h",
                  "$ per 1M", *(("$ per 1M tokens",) if tokens else ()), *(("Speed", "Work per $") if relative else ()),
                  *(("MFU",) if mfu else ()), *(("neuron-monitor TFLOP/s",) if monitor else ()),
                  *(("Check",) if checked else ()))
        blocks.append(Table(header, tuple(rows), (False, False) + (True,) * (len(header) - 2 - checked)
                            + ((False,) if checked else ()),
                            caption=f"{measure_title(workload, model)} · throughput in {unit}, "
                                    f"cost per 1M {WORK[workload]}" + (" and per 1M tokens" if tokens else "")))
        blocks += [Paragraph(s) for s in mfu_sentences(members)]
        stops = stop_sentences(members)
        if stops:
            blocks.append(Bullets(tuple(stops)))
        repeated = [g for g in doc["groups"] if g["n"] >= 2 and (g["workload"], g["model"]) == (workload, model)]
        if repeated:
            grows = []
            for g in repeated:
                ci = g["ci95"] or [None, None]
                grows.append((g["label"], str(g["batch_size"]), str(g["n"]), num(g["throughput"]),
                              f"{num(ci[0])} – {num(ci[1])}", usd(g["usd_per_1m"]),
                              ", ".join(g["overlaps_with"]) or "none"))
            blocks.append(Table(("Host", "Batch", "Runs", "Median", "95% interval", "$ per 1M",
                                 "Interval overlaps"), tuple(grows), (False, True, True, True, True, True, False),
                                caption="Across repeats: median and bootstrap 95% interval",
                                notes=("Hosts whose intervals overlap have not been shown to differ.",)))
    refs = {r["run_id"]: r["ref"] for r in doc["rows"]}
    bases = "; ".join(f"{measure_title(b['workload'], short_model(b['model']))}: {refs.get(b['run_id'])} "
                      f"({next(r['label'] for r in doc['rows'] if r['run_id'] == b['run_id'])})"
                      for b in doc.get("baselines") or [])
    notes = [f"Speed and work per dollar are relative to the baseline of each measure ({bases}); inference "
             "compares the same batch size. Run references (R1, …) are listed under Runs.",
             "N/A: not measured, or no price known (see Prices under Methodology). Never read N/A as zero."]
    if rough:
        notes.append("* p99 from fewer than 100 requests: rough.")
    if wrong:
        notes.append("Check WRONG or NaN: the compiled model's answers differ from the eager model's on CPU (fp32) "
                     "beyond the tolerance, or are not numbers; its figures are shown but measure a model that "
                     "computes something else (see the run's warnings).")
    blocks.append(Bullets(tuple(notes)))
    return blocks


def _bar_series(groups: list[dict[str, Any]], categories: list[Any], key: str, with_ci: bool,
                colours: dict[str, str]) -> list[svg.BarSeries]:
    labels = list(dict.fromkeys(g["label"] for g in groups))
    series = []
    for label in labels:
        mine = {g["batch_size"]: g for g in groups if g["label"] == label}
        values = [mine[c][key] if c in mine else None for c in categories]
        intervals = None
        if with_ci:
            intervals = [mine[c]["ci95"] if c in mine else None for c in categories]
        host = next(iter(mine.values())).get("host_label", label)
        series.append(svg.BarSeries(label, values, intervals,
                                    ["N/A" if c in mine else "not run" for c in categories], colours.get(host)))
    return series


def _charts(doc: dict[str, Any]) -> list[Block]:
    blocks: list[Block] = [Heading("Charts", page_break=True)]
    colours = colours_of(doc)
    for workload, model in measures(doc):
        groups = [g for g in doc["groups"] if g["workload"] == workload and g["model"] == model]
        name = f"{short_model(model)} {'training' if workload == 'train' else 'inference'}"
        unit = groups[0]["unit"]
        if workload == "train":
            categories: list[Any] = [None]
            names = ["training"]
            # training groups of one host at several batch sizes are separate bars
            groups = [dict(g, label=f"{g['label']} b{g['batch_size']}", host_label=g["label"]) if sum(
                1 for h in groups if h["label"] == g["label"]) > 1 else g for g in groups]
            groups = [dict(g, batch_size=None) for g in groups]
        else:
            categories = sorted({g["batch_size"] for g in groups})
            names = [f"batch {c}" for c in categories]
        has_ci = any(g["ci95"] for g in groups)
        throughput = _bar_series(groups, categories, "throughput", has_ci, colours)
        blocks.append(Chart(f"Throughput · {name}", svg.bar_chart(
            f"Throughput · {name}", names, throughput, unit), 720, 320,
            "Bars: median over repeats (or the single run); whiskers: bootstrap 95% interval." if has_ci
            else "One run per host and batch size: no interval."))
        work = WORK.get(workload, "units")
        costs = _bar_series(groups, categories, "usd_per_1m", False, colours)
        if any(v is not None for series in costs for v in series.values):
            blocks.append(Chart(f"Cost per 1M {work} · {name}", svg.bar_chart(
                f"Cost per 1M {work} · {name}", names, costs, f"USD per 1M {work}"), 720, 320,
                f"usd_per_1m = usd_per_hour / 3600 / throughput × 1e6, at {doc['market'].replace('_', '-')} "
                "prices. Lower is better; N/A where no price is known."))
        else:
            notes = sorted({g["price_note"] for g in groups if g["price_note"]})
            blocks.append(Paragraph(f"Cost per 1M {work} · {name}: N/A — no host has a known price"
                                    + (f" ({'; '.join(notes)})." if notes else "."), "note"))
        if workload == "infer":
            series = []
            for label in dict.fromkeys(g["label"] for g in groups):
                mine = sorted((g for g in groups if g["label"] == label and g["throughput"] is not None
                               and g["latency_p99_ms"] is not None), key=lambda g: g["batch_size"])
                series.append(svg.PointSeries(label, [(g["throughput"], g["latency_p99_ms"]) for g in mine],
                                              [f"b{g['batch_size']}" for g in mine], colours.get(label)))
            blocks.append(Chart(f"Latency vs throughput · {name}", svg.xy_chart(
                f"p99 latency vs throughput · {name}", series, unit, "p99 latency (ms)", lines=False), 720, 320,
                "Each point is one batch size (label b<N>); down and to the right is better."))
    blocks += _utilisation(doc)
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
    if not by_metric:
        return [Paragraph("Utilisation over time: N/A — no telemetry samples were recorded for these runs.",
                          "note")]
    sources = sorted({s for run in doc["runs"] for s in run["telemetry"]["sources"]})
    blocks: list[Block] = []
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
                  f"{r['telemetry']['buckets']} telemetry buckets — {r['spec_summary'] or NA}" for r in doc["runs"])
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
    blocks += _charts(doc)
    blocks += cost_details(doc)
    blocks += job_section(doc)
    blocks += _methodology(doc)
    blocks += _runs(doc)
    return blocks
