"""A training or inference measure of a report: its table (a row per host and batch size), repeats, and charts."""
from __future__ import annotations

from typing import Any

from app.core.compare import WORK
from app.core.mfu import mfu_text
from app.core.model_text import check_mark_of
from app.core.numbers import usd
from app.reports import svg
from app.reports.bars import bar_series, has_values
from app.reports.blocks import Block, Bullets, Chart, Paragraph, Table
from app.reports.efficiency import mfu_sentences, stop_sentences
from app.reports.wording import colours_of, num, short_model, times

UNIT_LABEL = {"train": "samples/s", "infer": "inferences/s"}
ROUGH = "* p99 from fewer than 100 requests: rough."
WRONG = ("Check WRONG or NaN: the compiled model's answers differ from the eager model's on CPU (fp32) beyond the "
         "tolerance, or are not numbers; its figures are shown but measure a model that computes something else "
         "(see the run's warnings).")


def throughput_section(doc: dict[str, Any], workload: str, model: str) -> list[Block]:
    """The table, the repeats' intervals, and the throughput, cost and (inference) latency charts."""
    members = [r for r in doc["rows"] if (r["workload"], r["model"]) == (workload, model)]
    blocks: list[Block] = [*_table(members, workload)]
    blocks += [Paragraph(s) for s in mfu_sentences(members)]
    stops = stop_sentences(members)
    if stops:
        blocks.append(Bullets(tuple(stops)))
    blocks += _repeats(doc, workload, model)
    return blocks + _charts(doc, workload, model)


def _table(members: list[dict[str, Any]], workload: str) -> list[Block]:
    train = workload == "train"
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
    rows, rough, wrong = [], False, False
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
    header = ("Host", "Run", "Batch × seq" if seq else "Batch", "Throughput",
              *(("Tokens/s",) if tokens else ()), *(() if train else ("p50 ms", "p99 ms")), "$/h",
              "$ per 1M", *(("$ per 1M tokens",) if tokens else ()), *(("Speed", "Work per $") if relative else ()),
              *(("MFU",) if mfu else ()), *(("neuron-monitor TFLOP/s",) if monitor else ()),
              *(("Check",) if checked else ()))
    numeric = (False, False) + (True,) * (len(header) - 2 - checked) + ((False,) if checked else ())
    notes = tuple(n for n, on in ((ROUGH, rough), (WRONG, wrong)) if on)
    return [Table(header, tuple(rows), numeric, caption=f"Throughput in {UNIT_LABEL[workload]}, cost per 1M "
                  f"{WORK[workload]}" + (" and per 1M tokens" if tokens else ""), notes=notes)]


def _repeats(doc: dict[str, Any], workload: str, model: str) -> list[Block]:
    repeated = [g for g in doc["groups"] if g["n"] >= 2 and (g["workload"], g["model"]) == (workload, model)]
    if not repeated:
        return []
    rows = []
    for g in repeated:
        ci = g["ci95"] or [None, None]
        rows.append((g["label"], str(g["batch_size"]), str(g["n"]), num(g["throughput"]),
                     f"{num(ci[0])} – {num(ci[1])}", usd(g["usd_per_1m"]), ", ".join(g["overlaps_with"]) or "none"))
    return [Table(("Host", "Batch", "Runs", "Median", "95% interval", "$ per 1M", "Interval overlaps"), tuple(rows),
                  (False, True, True, True, True, True, False),
                  caption="Across repeats: median and bootstrap 95% interval",
                  notes=("Hosts whose intervals overlap have not been shown to differ.",))]


def _charts(doc: dict[str, Any], workload: str, model: str) -> list[Block]:
    colours = colours_of(doc)
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

    def batch(g: dict[str, Any]) -> Any:
        return g["batch_size"]

    blocks: list[Block] = [Chart(f"Throughput · {name}", svg.bar_chart(
        f"Throughput · {name}", names, bar_series(groups, categories, batch, "throughput", has_ci, colours), unit),
        720, 320, "Bars: median over repeats (or the single run); whiskers: bootstrap 95% interval." if has_ci
        else "One run per host and batch size: no interval.")]
    blocks += cost_chart(doc, groups, categories, names, batch, name, WORK.get(workload, "units"), "usd_per_1m")
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
    return blocks


def cost_chart(doc: dict[str, Any], groups: list[dict[str, Any]], categories: list[Any], names: list[str],
               category_of: Any, name: str, work: str, key: str) -> list[Block]:
    """Bars of the cost per 1M of ``work`` per host and category, or the sentence why no host has a price."""
    costs = bar_series(groups, categories, category_of, key, False, colours_of(doc))
    if has_values(costs):
        return [Chart(f"Cost per 1M {work} · {name}", svg.bar_chart(
            f"Cost per 1M {work} · {name}", names, costs, f"USD per 1M {work}"), 720, 320,
            f"Cost per 1M = usd_per_hour / 3600 / throughput × 1e6, at {doc['market'].replace('_', '-')} prices. "
            "Lower is better; N/A where no price is known.")]
    notes = sorted({g["price_note"] for g in groups if g["price_note"]})
    return [Paragraph(f"Cost per 1M {work} · {name}: N/A — no host has a known price"
                      + (f" ({'; '.join(notes)})." if notes else "."), "note")]
