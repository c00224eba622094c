"""Comparing stored runs, part two: rows of one setup on one host grouped as repeats, with the median, its
bootstrap 95% interval, cost, and where each group stands against its measure's baseline (significance, overlaps).

Split from app/core/compare.py (past 500 lines), which makes the rows; pure like it.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.cost import price_performance, ratio, usd_for_seconds, usd_per_million, work_per_dollar
from app.core.llm_results import FIGURE_KEYS, llm_cost
from remote_agent.stats import bootstrap_ci, intervals_overlap, percentile


def _median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


def _scale(interval: Sequence[float] | None, factor: float | None) -> list[float] | None:
    if interval is None or factor is None:
        return None
    return [interval[0] * factor, interval[1] * factor]


def same_shape(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Same sequence length, and for LLM rows the same prompt and output lengths."""
    return a.get("seq_len") == b.get("seq_len") and a.get("input_len") == b.get("input_len") \
        and a.get("output_len") == b.get("output_len")


def repeat_groups(rows: list[dict[str, Any]], baseline_ids: set[str]) -> list[dict[str, Any]]:
    grouped: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        # Repeats are runs of one setup: another backend, precision or Neuron stack on the same host is another
        # setup (a cpu and an xla run of one host were once taken for two repeats of one).
        grouped.setdefault((row["label"], row["workload"], row["model"], row["batch_size"], row["seq_len"],
                            row.get("input_len"), row.get("output_len"), row.get("backend"), row.get("precision"),
                            row.get("stack"), tuple(row.get("neuron_options") or ())), []).append(row)
    groups = []
    for (label, workload, model, batch, seq_len, _in, _out, backend, precision, _stack, _neuron), members \
            in grouped.items():
        values = [r["throughput"] for r in members if r["throughput"] is not None]
        usd_h = members[0]["usd_per_hour"]
        median = _median(values)
        ci = list(bootstrap_ci(values)) if len(values) >= 2 else None
        to_wpd = work_per_dollar(1.0, usd_h)
        p99s = [r["latency_p99_ms"] for r in members if r["latency_p99_ms"] is not None]
        compiles = [r["compile_s"] for r in members if r["compile_s"] is not None]
        tokens = _median([r["tokens_per_s"] for r in members if r["tokens_per_s"] is not None])
        checked = [r["check_agrees"] for r in members if r["check_agrees"] is not None]
        groups.append({
            "label": label, "host": members[0]["host"], "instance_type": members[0]["instance_type"],
            "workload": workload, "model": model, "batch_size": batch, "seq_len": seq_len, "unit": members[0]["unit"],
            "backend": backend, "precision": precision,
            "run_ids": [r["run_id"] for r in members], "n": len(values),
            "throughput": median, "ci95": ci,
            "tokens_per_s": tokens, "usd_per_1m_tokens": usd_per_million(usd_h, tokens),
            # One wrong answer among the repeats marks the group: a compiler that is sometimes wrong is wrong.
            "check_agrees": all(checked) if checked else None,
            "usd_per_hour": usd_h, "price_source": members[0]["price_source"], "price_date": members[0]["price_date"],
            "price_note": members[0]["price_note"],
            "usd_per_1m": usd_per_million(usd_h, median),
            "work_per_dollar": work_per_dollar(median, usd_h), "work_per_dollar_ci95": _scale(ci, to_wpd),
            "latency_p99_ms": _median(p99s), "p99_reliable": all(r["p99_reliable"] is not False for r in members),
            "compile_s": _median(compiles),
            "compile_usd": usd_for_seconds(_median(compiles), usd_h),
            # A new instance starts with a cold compile cache: budgets and break-even count the
            # longest compile measured, not the median of (mostly cached) repeats.
            "compile_max_s": max(compiles) if compiles else None,
            "compile_max_usd": usd_for_seconds(max(compiles) if compiles else None, usd_h),
            "is_baseline": any(r["run_id"] in baseline_ids for r in members),
            "nodes": members[0].get("nodes", 1), "nproc": members[0].get("nproc", 1),
            "family": members[0].get("family"),
            # A lone run's interval comes from its own steps; two or more runs' from the runs.
            "scaling_ci95": ci if ci is not None else (members[0].get("steps_ci95") if len(members) == 1 else None),
            "benchmark_usd": _median([r["benchmark_usd"] for r in members if r["benchmark_usd"] is not None]),
            "mfu": _median([r["mfu"] for r in members if r.get("mfu") is not None]),
            "mfu_missing": members[0].get("mfu_missing"),
            "monitor_tflops": _median([r["monitor_tflops"] for r in members if r.get("monitor_tflops") is not None]),
            # LLM workloads: the median of each figure over the repeats, and its cost at the group's price.
            **_llm_group(members, usd_h),
            **{key: members[0].get(key) for key in SERVE_KEYS},
        })

    def same_measure(a: dict[str, Any], b: dict[str, Any]) -> bool:
        same = a["workload"] == b["workload"] and a["model"] == b["model"] and same_shape(a, b)
        return same and (a["workload"] == "train" or a["batch_size"] == b["batch_size"])

    for group in groups:
        base = next((b for b in groups if b["is_baseline"] and same_measure(group, b)), None)
        group["baseline_label"] = base["label"] if base and base is not group else None
        group["speedup_vs_baseline"] = ratio(group["throughput"], base["throughput"]) if base else None
        group["price_performance_vs_baseline"] = price_performance(
            group["throughput"], group["usd_per_hour"], base["throughput"], base["usd_per_hour"]) if base else None
        tested = base is not None and base is not group and group["ci95"] is not None and base["ci95"] is not None
        group["faster_significant"] = (not intervals_overlap(group["ci95"], base["ci95"])) if tested else None
        tested_wpd = tested and group["work_per_dollar_ci95"] is not None and base["work_per_dollar_ci95"] is not None
        group["price_performance_significant"] = (
            not intervals_overlap(group["work_per_dollar_ci95"], base["work_per_dollar_ci95"])) if tested_wpd else None
        # The flag DESIGN.md asks for: hosts whose intervals overlap measured the same thing
        # without showing a real difference.
        group["overlaps_with"] = sorted(
            other["label"] for other in groups
            if other is not group and other["label"] != group["label"] and same_measure(group, other)
            and group["ci95"] is not None and other["ci95"] is not None
            and intervals_overlap(group["ci95"], other["ci95"]))
    groups.sort(key=lambda g: (g["workload"] or "", g["model"], g["batch_size"] or 0, g["seq_len"] or 0,
                               g.get("input_len") or 0, g.get("output_len") or 0, not g["is_baseline"], g["label"]))
    return groups


# serve rows: where each host's figures were read (the operating point) and what the SLO said there.
SERVE_KEYS = ("concurrency", "rate", "slo_text", "slo_met", "slo_unmet", "operating_point", "load_name", "error_rate")


def _llm_group(members: list[dict[str, Any]], usd_h: float | None) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    for key in FIGURE_KEYS:
        if key in ("input_len", "output_len"):
            figures[key] = members[0].get(key)  # the group's shape, not a statistic
            continue
        values = [r[key] for r in members if r.get(key) is not None]
        figures[key] = _median(values) if values else None
    figures.update(llm_cost(usd_h, figures))
    return figures
