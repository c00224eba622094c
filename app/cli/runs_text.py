"""Terminal text for stored runs, their cost and comparisons (N/A for anything missing, never 0)."""
from __future__ import annotations

from typing import Any

from app.cli.job_text import format_job
from app.cli.llm_text import format_llm_compare
from app.core.clock_text import local_time_text
from app.core.compare import WORK, stack_text
from app.core.cost import TYPE_FROM_AFTER_RUN, TYPE_FROM_PROBE, TYPE_UNKNOWN, type_from_label
from app.core.mfu import mfu_text
from app.core.model_text import check_mark_of
from app.core.numbers import counted
from app.core.quoting import clean, clean_block
from app.core.runrecord import StoredRun, fingerprint


def num(value: float | None, fmt: str = ".4g", missing: str = "N/A") -> str:
    return missing if value is None else format(value, fmt)


def usd(value: float | None, digits: int = 4) -> str:
    return "N/A" if value is None else f"${value:.{digits}g}"


def when(seconds: float | None) -> str:
    return local_time_text(seconds)


def headline(run: StoredRun) -> str:
    """The run's figure in a few characters: samples/s for training, per batch size for inference."""
    result = run.result or {}
    if result.get("workload") == "train":
        value = (result.get("train") or {}).get("throughput_samples_per_s")
        return f"{num(value)} samples/s" if value is not None else "N/A"
    if result.get("workload") == "generate":
        points = [p for p in result.get("generate") or [] if not p.get("error")]
        return " · ".join(f"b{p.get('batch_size')} {p.get('input_len')}/{p.get('output_len')} "
                          f"{num(p.get('output_tok_s'))} out tok/s" for p in points) or "N/A"
    if result.get("workload") == "serve":
        from app.core.serve_points import operating_points

        return " · ".join(f"{p.get('input_len')}/{p.get('output_len')} {num(p.get('output_tok_s'))} out tok/s"
                          f" at {p.get('load_name')}" if p.get("load_name") else
                          f"{p.get('input_len')}/{p.get('output_len')} SLO not met"
                          for p in operating_points(result)) or "N/A"
    rows = result.get("infer") or []
    parts = [f"b{r.get('batch_size')}{'/s' + str(r['seq_len']) if r.get('seq_len') is not None else ''} "
             f"{num(r.get('throughput_per_s'))}/s" if not r.get("error") else f"b{r.get('batch_size')} failed"
             for r in rows]
    return " · ".join(parts) if parts else "N/A"


def table(rows: list[tuple[str, ...]]) -> str:
    rows = [tuple(clean(cell, 60) for cell in row) for row in rows]  # a host's or user's text, one cell each
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def format_run_list(runs: list[StoredRun]) -> str:
    rows = [("RUN ID", "CREATED", "HOST", "INSTANCE", "WORKLOAD", "MODEL", "STATUS", "RESULT")]
    for run in runs:
        rows.append((run.run_id, when(run.created_at), run.host, run.instance_type or "N/A", run.workload or "?",
                     run.model or "?", run.status, headline(run) if run.status in ("ok", "partial") else ""))
    return table(rows)


def format_cost(cost: dict[str, Any] | None) -> list[str]:
    if not cost:
        return ["  cost        N/A (not priced)"]
    if cost.get("usd_per_hour") is None:
        return [f"  cost        N/A: {cost.get('price_note') or 'no price'}"]
    lines = [f"  price       {usd(cost['usd_per_hour'])}/h {cost.get('instance_type')} {cost.get('region')} "
             f"{cost.get('market', 'on_demand').replace('_', '-')} · {cost.get('price_source')} "
             f"({cost.get('price_date')})"]
    if cost.get("instance_type_from") not in (None, TYPE_FROM_PROBE, TYPE_UNKNOWN):
        lines.append(f"              instance type {type_from_label(cost['instance_type_from'])}")
    if cost.get("price_note"):
        lines.append(f"              note: {cost['price_note']}")
    if "usd_per_1m_samples" in cost:
        compile_ = cost.get("compile") or {}
        tokens = f" · {usd(cost['usd_per_1m_tokens'])} per 1M tokens" if cost.get("usd_per_1m_tokens") else ""
        lines.append(f"  cost        {usd(cost.get('usd_per_1m_samples'))} per 1M samples{tokens}; compile "
                     f"{num(compile_.get('seconds'), '.1f')} s = {usd(compile_.get('usd'))}")
    for row in cost.get("usd_per_1m_inferences") or []:
        shape = f"b{row.get('batch_size')}" + (f"/s{row['seq_len']}" if row.get("seq_len") is not None else "")
        tokens = f" · {usd(row['usd_per_1m_tokens'])} per 1M tokens" if row.get("usd_per_1m_tokens") else ""
        lines.append(f"  cost {shape:<6} {usd(row.get('usd_per_1m'))} per 1M inferences{tokens}; "
                     f"compile {usd(row.get('compile_usd'))}")
    bench = cost.get("benchmark") or {}
    if bench.get("seconds") is not None:
        lines.append(f"  benchmark   {usd(bench.get('usd'))} for {num(bench['seconds'], '.0f')} s "
                     f"{bench.get('basis') or 'launch to terminate'}, setup and compile included")
    return lines


def format_run_detail(run: StoredRun, telemetry_rows: int, result_text: str | None) -> str:
    lines = [f"run {run.run_id} · {run.host} · {run.status}",
             f"  created     {when(run.created_at)}; ended {when(run.ended_at)}",
             f"  stored      {counted(run.event_count, 'event')}, {counted(telemetry_rows, 'telemetry bucket')}"]
    if run.status == "unfinished":
        lines.append("  unfinished: the app recording it stopped before the run ended; its host may still hold "
                     "the rest (re-attach to fetch it)")
    if run.declared:
        after = run.declared.get("declared_at")
        lines.append(f"  declared    {run.declared.get('instance_type') or 'N/A'} "
                     f"({run.declared.get('region') or 'region N/A'})"
                     + (f", {type_from_label(run.declared.get('source'))} ({when(after)})" if after else ""))
    prints = fingerprint(run.env)
    lines.append("  environment " + ", ".join(f"{k} {v}" for k, v in prints.items() if v) if run.env
                 else "  environment N/A (no probe received)")
    if result_text:
        lines.append(result_text)
    if run.result:
        lines += format_cost(run.result.get("cost"))
    return clean_block("\n".join(lines))


def instance_cell(row: dict[str, Any]) -> str:
    """A compare row's instance type, saying so when it was declared after the run (`runs set`)."""
    if not row["instance_type"]:
        return "N/A"
    if row.get("instance_type_from") != TYPE_FROM_AFTER_RUN:
        return row["instance_type"]
    return f"{row['instance_type']} ({type_from_label(TYPE_FROM_AFTER_RUN)})"


def format_compare(doc: dict[str, Any], sentences: list[str]) -> str:
    seq = any(row.get("seq_len") is not None for row in doc["rows"])
    tokens = any(row.get("tokens_per_s") for row in doc["rows"])
    checked = any(row.get("check_agrees") is not None or row.get("check_finite") is not None for row in doc["rows"])
    # neuron-monitor's own FLOP/s beside our MFU: a column only where some row ran under it (Neuron).
    monitor = any(row.get("monitor_tflops") is not None for row in doc["rows"])
    # Neuron's device stack and compile (native TorchNeuron or xla; cold, warm, loaded): where some row has one.
    stacked = any(row.get("stack") for row in doc["rows"])
    rows = [("RUN", "HOST", "INSTANCE", *(("STACK",) if stacked else ()), "BATCH", *(("SEQ",) if seq else ()),
             "THROUGHPUT", "MFU",
             *(("MONITOR TFLOP/s",) if monitor else ()),
             *(("TOKENS/s",) if tokens else ()), "P99 ms", "$/h", "$ PER 1M", *(("$ PER 1M TOKENS",) if tokens else ()),
             "SPEEDUP", "PRICE-PERF", *(("CHECK",) if checked else ()))]
    for row in doc["rows"]:
        mark = check_mark_of(row.get("check_agrees"), row.get("check_finite"),
                             row.get("check_agrees") is not None or row.get("check_finite") is not None)
        rows.append((row["run_id"], row["host"], instance_cell(row), *((stack_text(row),) if stacked else ()),
                     str(row["batch_size"]),
                     *((num(row.get("seq_len"), "d"),) if seq else ()),
                     f"{num(row['throughput'])} {row['unit']}", mfu_text(row.get("mfu")),
                     *((num(row.get("monitor_tflops")),) if monitor else ()),
                     *((num(row.get("tokens_per_s")),) if tokens else ()),
                     num(row["latency_p99_ms"], ".3g"), num(row["usd_per_hour"]), num(row["usd_per_1m"]),
                     *((num(row.get("usd_per_1m_tokens")),) if tokens else ()),
                     num(row["speedup_vs_baseline"], ".2f") + ("×" if row["speedup_vs_baseline"] else ""),
                     num(row["price_performance_vs_baseline"], ".2f")
                     + ("×" if row["price_performance_vs_baseline"] else ""), *((mark,) if checked else ())))
    out = [f"baseline {doc['baseline']} · {doc['market'].replace('_', '-')} prices", table(rows)]
    out += format_llm_compare(doc)
    for run_id, ops in {r["run_id"]: r.get("fallback_ops") for r in doc["rows"] if r.get("fallback_ops")}.items():
        out.append(f"warning: {run_id} ran {len(ops)} op(s) on the host CPU, not the NeuronCore "
                   f"({', '.join(ops[:6])}): its figures are partly the CPU's")
    repeated = [g for g in doc["groups"] if g["n"] >= 2]
    if repeated:
        out.append("\nmedians across repeats (bootstrap 95% interval):")
        for g in repeated:
            ci = g["ci95"]
            flag = f"  overlaps {', '.join(g['overlaps_with'])}: not a significant difference" \
                if g["overlaps_with"] else ""
            out.append(f"  {g['label']} batch {g['batch_size']}: {num(g['throughput'])} {g['unit']} "
                       f"({num(ci[0])}–{num(ci[1])}) over {g['n']} runs; {usd(g['usd_per_1m'])} per 1M "
                       f"{WORK.get(g['workload'], '')}{flag}")
    if doc.get("scaling"):
        out.append("\nscaling across nodes (a fixed batch per process; intervals from repeats, else from each run's "
                   "steps):")
        srows = [("NODES", "WORLD", "THROUGHPUT", "95% INTERVAL", "SPEED-UP", "EFFICIENCY", "95% INTERVAL", "$/h",
                  "$ PER 1M")]
        for r in doc["scaling"]:
            ci, eci = r["throughput_ci95"] or [None, None], r["efficiency_ci95"] or [None, None]
            srows.append((str(r["nodes"]), str(r["world_size"]), num(r["throughput"]), f"{num(ci[0])}–{num(ci[1])}",
                          f"{r['speedup']:.2f}×", f"{r['efficiency'] * 100:.0f}%",
                          "N/A" if eci[0] is None else f"{eci[0] * 100:.0f}–{eci[1] * 100:.0f}%",
                          num(r["usd_per_hour"]), num(r["usd_per_1m"])))
        out.append(table(srows))
    sources = sorted({f"{r['price_source']} ({r['price_date']})" for r in doc["rows"] if r["price_source"]})
    if sources:
        out.append("\nprices: " + "; ".join(sources))
    for budget in doc.get("budget") or []:
        out.append(f"budget {budget['label']}: {budget['epochs']:g} epochs × {budget['samples_per_epoch']:,} samples "
                   f"= {num(budget['total_hours'], '.3g')} h, {usd(budget['total_usd'])} "
                   f"(compile {num(budget['compile_s'], '.0f')} s = {usd(budget['compile_usd'])})")
    benchmarked = {r["run_id"]: r for r in doc["rows"] if r.get("instance_id") or r.get("benchmark_usd") is not None}
    for run_id, row in benchmarked.items():
        if row.get("instance_id"):
            out.append(f"benchmark cost {run_id} ({row['host']}, instance {row['instance_id']}): "
                       f"{usd(row['benchmark_usd'])} for {num(row['benchmark_s'], '.0f')} s launch to terminate, "
                       f"boot and compile included")
        else:
            out.append(f"benchmark cost {run_id} ({row['host']}): {usd(row['benchmark_usd'])} for "
                       f"{num(row['benchmark_s'], '.0f')} s run start to end, setup and compile included")
    out += format_job(doc)
    for even in doc.get("break_even") or []:
        out.append(f"break-even: {even['cheaper_after']} costs less than {even['than']} in total after "
                   f"{even['samples']:,.0f} samples (its longer compile paid back)")
    if sentences:
        out.append("")
        out.extend(sentences)
    return "\n".join(out)
