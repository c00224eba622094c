"""A serve measure of a report: each host's operating point, every load level of each run, and p99 TTFT by
output tok/s with the SLO's line, as the live view draws it (a level per point; look for the knee)."""
from __future__ import annotations

from typing import Any

from app.core.numbers import NA, usd
from app.core.serve_levels import error_rate_text, slo_word
from app.reports import svg
from app.reports.blocks import Block, Bullets, Chart, Table
from app.reports.throughput_section import cost_chart
from app.reports.wording import colours_of, num, short_model, times


def shape_key(row: dict[str, Any]) -> tuple:
    return (row.get("input_len") or 0, row.get("output_len") or 0)


def serve_section(doc: dict[str, Any], model: str) -> list[Block]:
    members = [r for r in doc["rows"] if (r["workload"], r["model"]) == ("serve", model)]
    runs = {r["run_id"]: r for r in doc["runs"]}
    return [*_operating_points(members, runs), *_levels(members, runs), *_charts(doc, model, members, runs)]


def _operating_points(members: list[dict[str, Any]], runs: dict[str, dict[str, Any]]) -> list[Block]:
    relative = len({r["run_id"] for r in members}) > 1
    rows = []
    for r in sorted(members, key=lambda r: (shape_key(r), r["label"])):
        stack = (runs.get(r["run_id"], {}).get("serve") or {}).get("stack") or NA
        rows.append((r["label"], r["ref"] or "", stack, f"{r.get('input_len')}/{r.get('output_len')}",
                     r.get("load_name") or "none met the SLO", num(r.get("ttft_p99_ms"), ".3g"),
                     num(r.get("tpot_p99_ms"), ".3g"), num(r.get("output_tok_s")),
                     error_rate_text({"error_rate": r.get("error_rate")}) if r.get("load_name") else NA,
                     usd(r.get("usd_per_1m_output_tokens")),
                     *((times(r["speedup_vs_baseline"]), times(r["price_performance_vs_baseline"]))
                       if relative else ())))
    slo = next((r.get("slo_text") for r in members if r.get("slo_text")), None)
    header = ("Host", "Run", "Server", "In/out tokens", "Operating load", "TTFT p99 ms", "TPOT p99 ms",
              "Output tok/s", "Error rate", "$ per 1M output tokens",
              *(("Speed", "Output tokens per $") if relative else ()))
    numeric = (False, False, False, True, True) + (True,) * (len(header) - 5)
    caption = (f"Operating point: the highest output tok/s that meets the SLO ({slo})" if slo else
               "Operating point: the highest output tok/s measured (saturation: no SLO was given)")
    unmet = tuple(f"{r['label']} ({r['ref']}): {r['slo_unmet']}." for r in members if r.get("slo_unmet"))
    return [Table(header, tuple(rows), numeric, caption=caption, notes=unmet)]


def _levels(members: list[dict[str, Any]], runs: dict[str, dict[str, Any]]) -> list[Block]:
    """One table per run: every load level in the order run."""
    blocks: list[Block] = []
    for run_id in dict.fromkeys(r["run_id"] for r in members):
        run = runs.get(run_id) or {}
        serve = run.get("serve") or {}
        levels = serve.get("levels") or []
        if not levels:
            continue
        shapes = len({shape_key(lv) for lv in levels}) > 1
        rows = []
        for lv in levels:
            rows.append((lv["load"], *((f"{lv['input_len']}/{lv['output_len']}",) if shapes else ()),
                         num(lv["requests"], "d"), num(lv["errors"], "d"), error_rate_text(lv),
                         num(lv["ttft_p50_ms"], ".3g"), num(lv["ttft_p99_ms"], ".3g"), num(lv["tpot_p50_ms"], ".3g"),
                         num(lv["tpot_p99_ms"], ".3g"), num(lv["output_tok_s"]), slo_word(lv)))
        header = ("Load", *(("In/out",) if shapes else ()), "Requests", "Errors", "Error rate", "TTFT p50 ms",
                  "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms", "Output tok/s", "SLO")
        numeric = (False,) + (True,) * (len(header) - 2) + (False,)
        slo = f" · SLO {serve['slo_text']}" if serve.get("slo_text") else " · no SLO"
        blocks.append(Table(header, tuple(rows), numeric,
                            caption=f"{run['ref']} {run['label']} · {serve.get('stack') or NA}{slo} · per load level"))
    notes = ["Load: c=N closed-loop concurrency levels, then N/s the SLO's seeded Poisson rate search. A level meets "
             "the SLO only if every term holds and its error rate is within the bound; failed, cut and short "
             "requests are all errors."]
    return blocks + [Bullets(tuple(notes))]


def _charts(doc: dict[str, Any], model: str, members: list[dict[str, Any]],
            runs: dict[str, dict[str, Any]]) -> list[Block]:
    colours = colours_of(doc)
    name = f"{short_model(model)} serving"
    series, limits = [], []
    for run_id in dict.fromkeys(r["run_id"] for r in members):
        run = runs.get(run_id) or {}
        serve = run.get("serve") or {}
        points = sorted((lv["output_tok_s"], lv["ttft_p99_ms"], lv["load"]) for lv in serve.get("levels") or []
                        if lv["output_tok_s"] is not None and lv["ttft_p99_ms"] is not None)
        series.append(svg.PointSeries(f"{run['ref']} {run['label']}", [(x, y) for x, y, _ in points],
                                      [load for _, _, load in points], colours.get(run["label"])))
        if serve.get("slo_ttft_p99_ms") is not None:
            limits.append(serve["slo_ttft_p99_ms"])
    limit = (min(limits), f"SLO p99 TTFT {min(limits):g} ms") if limits else None
    title = f"p99 TTFT by output tok/s · {name}"
    blocks: list[Block] = [Chart(title, svg.xy_chart(title, series, "output tok/s", "p99 TTFT (ms)", lines=False,
                                                     limit=limit), 720, 320,
                                 "Each point is one load level (c=N concurrency, N/s Poisson rate); the knee is where "
                                 "latency climbs faster than throughput." + (" Dashed: the SLO's p99 TTFT." if limit
                                                                             else ""))]
    groups = [g for g in doc["groups"] if g["workload"] == "serve" and g["model"] == model]
    categories = sorted({shape_key(g) for g in groups})
    names = [f"{c[0]}/{c[1]} at its operating point" for c in categories]
    blocks += cost_chart(doc, groups, categories, names, shape_key, name, "output tokens", "usd_per_1m_output_tokens")
    return blocks
