"""Terminal text of the LLM workloads: a generate Result's sweep points, and compare's LLM table."""
from __future__ import annotations

from typing import Any

from app.core.llm_results import TOTAL_TOKENS_LABEL, llm_figures, shape_text
from app.core.mfu import mfu_text
from app.core.model_text import check_mark, format_check
from app.core.numbers import figure


def _num(value: float | None, fmt: str = ".3g") -> str:
    return "N/A" if value is None else format(value, fmt)


def _usd(value: float | None) -> str:
    return "N/A" if value is None else f"${value:.3g}" if value < 1 else f"${value:,.2f}"


def _table(rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(cell.rjust(widths[i]) if i else cell.ljust(widths[i]) for i, cell in enumerate(row))
            for row in rows]


def format_generate_table(result: dict[str, Any]) -> list[str]:
    """The generate block: one line per sweep point (TTFT, TPOT, rates, $/1M output tokens), then how it ran."""
    points = result.get("generate") or []
    if not points:
        return []
    costs = {(c.get("batch_size"), c.get("input_len"), c.get("output_len")): c
             for c in (result.get("cost") or {}).get("usd_per_1m_output_tokens") or []}
    rows = [("batch", "in", "out", "calls", "TTFT p50 ms", "p99", "TPOT p50 ms", "p99", "E2E p50 ms",
             "prefill tok/s", "decode tok/s", "output tok/s", "$/1M out", "check")]
    notes: list[str] = []
    for point in points:
        if point.get("error"):
            rows.append((str(point.get("batch_size")), str(point.get("input_len")), str(point.get("output_len")),
                         "failed", *(["—"] * 9), ""))
            notes.append(f"  {shape_text(point)}: {point['error'].get('message')}")
            continue
        f = llm_figures(point)
        rough = "" if f["llm_p99_reliable"] else "*"
        cost = costs.get((point.get("batch_size"), point.get("input_len"), point.get("output_len"))) or {}
        rows.append((str(point.get("batch_size")), str(point.get("input_len")), str(point.get("output_len")),
                     _num(point.get("calls"), "d"), _num(f["ttft_p50_ms"]), _num(f["ttft_p99_ms"]) + rough,
                     _num(f["tpot_p50_ms"]), _num(f["tpot_p99_ms"]) + rough, _num(f["e2e_p50_ms"]),
                     _num(f["prefill_tok_s"], ",.0f"), _num(f["decode_tok_s"], ",.0f"),
                     _num(f["output_tok_s"], ",.1f"), _usd(cost.get("usd_per_1m_output_tokens")),
                     check_mark(point.get("check")) if point.get("check") else ""))
    lines = ["  generate    exactly N new tokens per row (EOS off), every call counted; "
             "TPOT = (E2E − TTFT)/(N − 1)"] + _table(rows)
    for point in points:
        if point.get("error"):
            continue
        where = shape_text(point)
        first = point.get("first_call_s")
        compile_s = point.get("compile_s")
        load = f"load {_num(point.get('load_s'), '.2f')} s · first call {_num(first, '.2f')} s"
        load += f" (compiling {compile_s:.2f} s)" if compile_s else \
            (f" ({point['compile_note']})" if point.get("compile_note") else "")
        lines.append(f"  {where}: {point.get('stack') or 'stack N/A'} · {load} · "
                     f"{_num(point.get('warmup_calls'), 'd')} warm-up calls")
        total = point.get("total_tok_s")
        cost = costs.get((point.get("batch_size"), point.get("input_len"), point.get("output_len"))) or {}
        lines.append(f"    {_num(total, ',.0f')} {TOTAL_TOKENS_LABEL}/s · "
                     f"{_usd(cost.get('usd_per_1m_total_tokens'))} per 1M {TOTAL_TOKENS_LABEL}"
                     + (f" · MFU prefill {mfu_text(point.get('mfu_prefill'))}, decode "
                        f"{mfu_text(point.get('mfu_decode'))}" if "mfu_prefill" in point else "")
                     + (f" · {figure((point.get('prefill_flops_per_row') or 0) / 1e9)} GFLOP prefill a row, "
                        f"{figure((point.get('decode_flops_per_token') or 0) / 1e9)} GFLOP a decode token"
                        if point.get("prefill_flops_per_row") else ""))
        if point.get("check"):
            check = point["check"]
            agreement = check.get("greedy_agreement")
            lines.append(f"    check {format_check(check, brief=True)}; greedy tokens "
                         f"{'N/A' if agreement is None else f'{agreement * 100:.0f}%'} the same as eager "
                         f"fp32 on CPU (information: random weights make near-ties)")
    if any(not llm_figures(p)["llm_p99_reliable"] for p in points if not p.get("error")):
        lines.append("  * p99 from fewer than 100 calls: rough")
    return lines + notes


def _load(row: dict[str, Any]) -> str:
    """A generate row's batch, or a serve row's load level (its operating point; N/A: no load met the SLO)."""
    if row.get("workload") != "serve":
        return str(row.get("batch_size"))
    if row.get("rate") is not None:
        return f"{row['rate']:.3g}/s"
    return f"c={row['concurrency']}" if row.get("concurrency") is not None else "N/A"


def format_llm_compare(doc: dict[str, Any]) -> list[str]:
    """Compare's LLM table (generate and serve rows): TTFT, TPOT, output tok/s, $ per 1M tokens."""
    llm = [r for r in doc.get("rows") or [] if r.get("output_len") is not None]
    if not llm:
        return []
    rows = [("RUN", "INSTANCE", "BATCH", "IN/OUT", "TTFT p50 ms", "p99", "TPOT p50 ms", "p99", "OUTPUT tok/s",
             "$/1M OUTPUT", "$/1M TOTAL*", "SPEEDUP")]
    for r in llm:
        rows.append((r["run_id"], str(r.get("label") or r.get("instance_type") or r.get("host")),
                     _load(r), f"{r.get('input_len')}/{r.get('output_len')}",
                     _num(r.get("ttft_p50_ms")), _num(r.get("ttft_p99_ms")), _num(r.get("tpot_p50_ms")),
                     _num(r.get("tpot_p99_ms")), _num(r.get("output_tok_s"), ",.1f"),
                     _usd(r.get("usd_per_1m_output_tokens")), _usd(r.get("usd_per_1m_total_tokens")),
                     _num(r.get("speedup_vs_baseline"), ".2f") + ("×" if r.get("speedup_vs_baseline") else "")))
    return ["", "LLM generation and serving (TTFT: start to first token; TPOT: per output token after it; "
            "serve rows at their operating point):"] + \
        [line[2:] for line in _table(rows)] + [f"* per 1M {TOTAL_TOKENS_LABEL}"]
