"""A serve Result in compare: one row per shape at its operating point, and the sentences about the SLO.

A serve run measures many load levels (closed-loop concurrency levels, and with an SLO Poisson rates).  What
compare, cost and reports show for a host is one level per (input, output) shape: with an SLO, the level of
highest output tok/s that meets it (the goodput point, research/llm-serving.md §4: cost is quoted there, not at
saturation); without an SLO, the highest output tok/s measured, labelled saturation.  A host whose levels all
missed the SLO still has a row: no throughput, no cost, and the sentence saying what the best level did.
"""
from __future__ import annotations

from typing import Any

from app.core.llm_results import llm_figures
from app.core.serve_levels import level_error_rate
from app.core.serve_points import operating_points


def serve_row(point: dict[str, Any], server: dict[str, Any]) -> dict[str, Any]:
    """One serve operating point as a compare row (output tok/s its throughput, E2E its latency)."""
    figures = llm_figures(point)
    return {"batch_size": None, "seq_len": None, **figures,
            "throughput": figures["output_tok_s"], "tokens_per_s": figures["total_tok_s"],
            "latency_p50_ms": figures["e2e_p50_ms"], "latency_p99_ms": figures["e2e_p99_ms"],
            "p99_reliable": figures["llm_p99_reliable"], "compile_s": server.get("load_s"),
            "load_s": server.get("load_s"), "stack": server.get("stack") or server.get("server"),
            "concurrency": point.get("concurrency"), "rate": point.get("rate"),
            "goodput_rps": point.get("goodput_rps"), "requests_per_s": point.get("requests_per_s"),
            "slo_text": point.get("slo_text"), "slo_met": point.get("slo_met"), "slo_unmet": point.get("slo_unmet"),
            "error_rate": level_error_rate(point),  # None: no level met the SLO (no operating point)
            "operating_point": point.get("operating_point"), "load_name": point.get("load_name")}


def serve_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    server = (result.get("serve") or {}).get("server") or {}
    return [serve_row(point, server) for point in operating_points(result)]


def _money(value: float) -> str:
    return f"${value:.3g}" if value < 1 else f"${value:,.2f}"


def serve_sentences(groups: list[dict[str, Any]]) -> list[str]:
    """Per serve measure (model, shape, SLO): which host is cheapest per 1M output tokens at the SLO, and which
    could not meet it at any load."""
    sentences = []
    measures: dict[tuple, list[dict[str, Any]]] = {}
    for group in groups:
        if group.get("workload") == "serve":
            key = (group["model"], group.get("input_len"), group.get("output_len"), group.get("slo_text"))
            measures.setdefault(key, []).append(group)
    for (model, s_in, s_out, slo), members in measures.items():
        what = f"{model.split('(')[0].split(' ')[0]} ({s_in} in / {s_out} out)"
        at = f"at {slo}" if slo else "at saturation (no SLO given)"
        priced = [g for g in members if g.get("usd_per_1m_output_tokens") is not None]
        if priced:
            ranked = sorted(priced, key=lambda g: g["usd_per_1m_output_tokens"])
            best = ranked[0]
            where = f" ({best['load_name']})" if best.get("load_name") else ""
            others = "; then " + ", ".join(f"{g['label']} {_money(g['usd_per_1m_output_tokens'])}"
                                           for g in ranked[1:]) if len(ranked) > 1 else ""
            sentences.append(f"Serving {what} {at}, the cheapest per 1M output tokens is {best['label']} at "
                             f"{_money(best['usd_per_1m_output_tokens'])}{where}{others}.")
        for group in members:
            if group.get("slo_unmet"):
                sentences.append(f"{group['label']} could not meet the SLO at any load: {group['slo_unmet']}.")
    return sentences
