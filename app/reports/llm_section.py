"""The LLM measures of a report (generate, and serve's levels): TTFT, TPOT, output tok/s and $ per 1M tokens."""
from __future__ import annotations

from typing import Any

from app.core.llm_results import TOTAL_TOKENS_LABEL
from app.core.mfu import mfu_text
from app.core.model_text import check_mark_of
from app.core.numbers import usd
from app.reports.blocks import Block, Bullets, Table
from app.reports.wording import measure_title, num, times


def llm_results(doc: dict[str, Any], workload: str, model: str) -> list[Block]:
    """One table per LLM measure: a row per host and sweep point, the figures a decision rests on."""
    members = [r for r in doc["rows"] if (r["workload"], r["model"]) == (workload, model)]
    relative = len({r["run_id"] for r in members}) > 1
    rough = False
    rows = []
    for r in sorted(members, key=lambda r: (r.get("input_len") or 0, r.get("output_len") or 0,
                                            r["batch_size"] or 0, r["label"])):
        p99 = [num(r.get(key), ".3g") for key in ("ttft_p99_ms", "tpot_p99_ms")]
        if r.get("p99_reliable") is False:
            p99 = [value + "*" for value in p99]
            rough = True
        mark = check_mark_of(r.get("check_agrees"), r.get("check_finite"),
                             r.get("check_agrees") is not None or r.get("check_finite") is not None)
        rows.append((r["label"], r["ref"] or "", f"{r['batch_size']} · {r.get('input_len')}/{r.get('output_len')}",
                     num(r.get("ttft_p50_ms"), ".3g"), p99[0], num(r.get("tpot_p50_ms"), ".3g"), p99[1],
                     num(r.get("output_tok_s")), usd(r["usd_per_hour"]), usd(r.get("usd_per_1m_output_tokens")),
                     usd(r.get("usd_per_1m_total_tokens")),
                     *((times(r["speedup_vs_baseline"]), times(r["price_performance_vs_baseline"]))
                       if relative else ()),
                     f"{mfu_text(r.get('mfu_prefill'))} / {mfu_text(r.get('mfu_decode'))}", mark))
    header = ("Host", "Run", "Batch · in/out", "TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms",
              "Output tok/s", "$/h", "$ per 1M output tokens", f"$ per 1M {TOTAL_TOKENS_LABEL}",
              *(("Speed", "Output tokens per $") if relative else ()), "MFU prefill / decode", "Check")
    numeric = (False, False, False) + (True,) * (len(header) - 4) + (False,)
    notes = ["TTFT: call start to the first new token; TPOT: (E2E − TTFT)/(N − 1); every row generated exactly "
             "N new tokens (EOS off), counted after every call. Output tok/s = B·N/E2E of the median call.",
             f"$ per 1M output tokens = $/h ÷ (3600 × output tok/s) × 1e6; the {TOTAL_TOKENS_LABEL} column counts the "
             "prompt too, labelled so."]
    if rough:
        notes.append("* p99 from fewer than 100 calls: rough.")
    return [Table(header, tuple(rows), numeric, caption=f"{measure_title(workload, model)} · per sweep point "
                  "(batch · prompt tokens / new tokens)"), Bullets(tuple(notes))]
