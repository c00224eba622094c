"""A generate measure of a report: a row per host and sweep point (TTFT, TPOT, output tok/s, $ per 1M output
tokens), then output tok/s and its cost per point as charts."""
from __future__ import annotations

from typing import Any

from app.core.llm_results import TOTAL_TOKENS_LABEL
from app.core.mfu import mfu_text
from app.core.model_text import check_mark_of
from app.core.numbers import usd
from app.reports import svg
from app.reports.bars import bar_series
from app.reports.blocks import Block, Bullets, Chart, Table
from app.reports.throughput_section import cost_chart
from app.reports.wording import colours_of, num, short_model, times

ROUGH = "* p99 from fewer than 100 calls: rough."


def point_key(row: dict[str, Any]) -> tuple:
    return (row.get("batch_size") or 0, row.get("input_len") or 0, row.get("output_len") or 0)


def point_name(key: tuple) -> str:
    """``b4 · 128/128``: batch · prompt tokens / new tokens, a chart's category."""
    return f"b{key[0]} · {key[1]}/{key[2]}"


def generate_section(doc: dict[str, Any], model: str) -> list[Block]:
    members = [r for r in doc["rows"] if (r["workload"], r["model"]) == ("generate", model)]
    relative = len({r["run_id"] for r in members}) > 1
    mfu = any(r.get("mfu_prefill") is not None or r.get("mfu_decode") is not None for r in members)
    checked = any(r.get("check_agrees") is not None or r.get("check_finite") is not None for r in members)
    rough = False
    rows = []
    for r in sorted(members, key=lambda r: (point_key(r)[1:], point_key(r)[0], r["label"])):
        p99 = [num(r.get(key), ".3g") for key in ("ttft_p99_ms", "tpot_p99_ms")]
        if r.get("p99_reliable") is False:
            p99 = [value + "*" for value in p99]
            rough = True
        mark = check_mark_of(r.get("check_agrees"), r.get("check_finite"), checked)
        rows.append((r["label"], r["ref"] or "", str(r["batch_size"]), f"{r.get('input_len')}/{r.get('output_len')}",
                     num(r.get("ttft_p50_ms"), ".3g"), p99[0], num(r.get("tpot_p50_ms"), ".3g"), p99[1],
                     num(r.get("output_tok_s")), usd(r.get("usd_per_1m_output_tokens")),
                     *((times(r["speedup_vs_baseline"]), times(r["price_performance_vs_baseline"]))
                       if relative else ()),
                     *((f"{mfu_text(r.get('mfu_prefill'))} / {mfu_text(r.get('mfu_decode'))}",) if mfu else ()),
                     *((mark,) if checked else ())))
    header = ("Host", "Run", "Batch", "In/out tokens", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms",
              "Output tok/s", "$ per 1M output tokens", *(("Speed", "Output tokens per $") if relative else ()),
              *(("MFU prefill / decode",) if mfu else ()), *(("Check",) if checked else ()))
    numeric = (False, False) + (True,) * (len(header) - 2 - checked) + ((False,) if checked else ())
    notes = ["TTFT: call start to the first new token; TPOT: (E2E − TTFT)/(N − 1); every row generated exactly "
             "N new tokens (EOS off), counted after every call. Output tok/s = B·N/E2E of the median call.",
             "$ per 1M output tokens = $/h ÷ (3600 × output tok/s) × 1e6 (the $/h is under Prices). Per 1M "
             f"{TOTAL_TOKENS_LABEL}: " + "; ".join(f"{r['label']} {point_name(point_key(r))} "
                                                   f"{usd(r.get('usd_per_1m_total_tokens'))}" for r in members) + "."]
    if rough:
        notes.append(ROUGH)
    blocks: list[Block] = [Table(header, tuple(rows), numeric, caption="Per sweep point (batch, prompt tokens / new "
                                 "tokens), each its own process")]
    return blocks + [Bullets(tuple(notes))] + _charts(doc, model)


def _charts(doc: dict[str, Any], model: str) -> list[Block]:
    groups = [g for g in doc["groups"] if g["workload"] == "generate" and g["model"] == model]
    categories = sorted({point_key(g) for g in groups})
    names = [point_name(c) for c in categories]
    name = f"{short_model(model)} generation"
    has_ci = any(g["ci95"] for g in groups)
    series = bar_series(groups, categories, point_key, "throughput", has_ci, colours_of(doc))
    blocks: list[Block] = [Chart(f"Output tok/s · {name}", svg.bar_chart(
        f"Output tok/s · {name}", names, series, "output tok/s"), 720, 320,
        "One bar per host and sweep point (b<batch> · prompt/new tokens); higher is better.")]
    return blocks + cost_chart(doc, groups, categories, names, point_key, name, "output tokens",
                               "usd_per_1m_output_tokens")
