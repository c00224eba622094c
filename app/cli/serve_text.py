"""Terminal text of a serve Result: one line per load level, then the operating point and its cost."""
from __future__ import annotations

from typing import Any

from app.core.llm_results import TOTAL_TOKENS_LABEL
from app.core.serve_levels import error_rate_text, level_rows, server_stack, slo_word
from app.core.serve_points import operating_points, serve_levels


def _num(value: float | None, fmt: str = ".3g") -> str:
    return "N/A" if value is None else format(value, fmt)


def _usd(value: float | None) -> str:
    return "N/A" if value is None else f"${value:.3g}" if value < 1 else f"${value:,.2f}"


def _p(level: dict[str, Any], metric: str, stat: str) -> float | None:
    return (level.get(metric) or {}).get(stat)


def _load(level: dict[str, Any]) -> str:
    return f"{level['rate']:.3g}/s" if level.get("rate") is not None else f"c={level.get('concurrency')}"


def _pct(share: float | None) -> str:
    return "N/A" if share is None else f"{100 * share:.3g}%"


def _client_lines(levels: list[dict[str, Any]]) -> list[str]:
    """What the load client itself cost per level: CPU per request (and of a core), its send lag."""
    lines = []
    for lv in levels:
        client = lv.get("client")
        if not isinstance(client, dict):
            continue  # a run stored before the client measured itself
        lag = client.get("send_lag_ms") or {}
        per_request = client.get("cpu_s_per_request")
        cpu_ms = None if per_request is None else per_request * 1000
        lines.append(f"  client  {_load(lv)}: {_num(cpu_ms, '.3g')} ms CPU a request "
                     f"({_pct(client.get('cpu_share'))} of a core), send lag p50 {_num(lag.get('p50'), '.3g')} / "
                     f"p99 {_num(lag.get('p99'), '.3g')} / max {_num(lag.get('max'), '.3g')} ms")
    return lines


def format_serve_table(result: dict[str, Any]) -> list[str]:
    levels = serve_levels(result)
    serve = result.get("serve") or {}
    if not serve:
        return []
    server = serve.get("server") or {}
    stack = server_stack(result)
    if server.get("vllm"):  # vllm (cpu) -> vllm (cpu, vLLM 0.32.0)
        stack = f"{stack[:-1]}, vLLM {server['vllm']})" if stack.endswith(")") else f"{stack} (vLLM {server['vllm']})"
    lines = [f"  serve       {stack}"
             + f" · ready in {_num(server.get('ready_s'), '.1f')} s, first request "
               f"{_num(server.get('first_request_s'), '.2f')} s"
             + f" (load {_num(server.get('load_s'), '.1f')} s, apart from the figures)"]
    if server.get("endpoint"):
        lines.append(f"              {server['endpoint']} · model {server.get('model')}")
    if not levels:
        return lines
    slo = serve.get("slo")
    rows = [("load", "in", "out", "reqs", "err", "err %", "TTFT p50 ms", "p99", "TPOT p50 ms", "p99", "ITL p99",
             "req/s", "out tok/s", "goodput/s", "SLO")]
    for lv, row in zip(levels, level_rows(result), strict=True):
        rows.append((_load(lv), str(lv.get("input_len")), str(lv.get("output_len")), str(lv.get("completed")),
                     str(lv.get("errors")), error_rate_text(row), _num(_p(lv, "ttft_ms", "p50")),
                     _num(_p(lv, "ttft_ms", "p99")),
                     _num(_p(lv, "tpot_ms", "p50")), _num(_p(lv, "tpot_ms", "p99")), _num(_p(lv, "itl_ms", "p99")),
                     _num(lv.get("requests_per_s")), _num(lv.get("output_tok_s"), ",.1f"),
                     _num(lv.get("goodput_rps")) if slo else "—",
                     slo_word(row) if slo else "—"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += ["  " + "  ".join(c.rjust(widths[i]) if i else c.ljust(widths[i]) for i, c in enumerate(row))
              for row in rows]
    lines += _client_lines(levels)
    if slo:
        bound = serve.get("slo_max_error_rate")
        rules = [] if bound is None else [f"a level meets the SLO with at most {_pct(bound)} of its requests failed"]
        if serve.get("latency_from") == "scheduled":
            rules.append("latency counts from each request's scheduled send (MLPerf LoadGen's rule)")
        if serve.get("itl_rule"):
            rules.append(f"an ITL limit is held to each request's {serve['itl_rule'].replace(' per request', '')}")
        if rules:
            lines.append("  " + "; ".join(rules))
    costs = {(c.get("input_len"), c.get("output_len")): c
             for c in (result.get("cost") or {}).get("usd_per_1m_output_tokens") or [] if isinstance(c, dict)}
    for point in operating_points(result):
        shape = f"{point.get('input_len')} in / {point.get('output_len')} out"
        cost = costs.get((point.get("input_len"), point.get("output_len"))) or {}
        if point.get("slo_unmet"):
            lines.append(f"  {shape}: {point['slo_unmet']}")
            continue
        at = f"goodput point at {serve.get('slo_text')}" if slo else "saturation (no --slo given)"
        lines.append(f"  {shape}: {at}: {point.get('load_name')} · {_num(point.get('output_tok_s'), ',.1f')} output "
                     f"tok/s · {_usd(cost.get('usd_per_1m_output_tokens'))} per 1M output tokens, "
                     f"{_usd(cost.get('usd_per_1m_total_tokens'))} per 1M {TOTAL_TOKENS_LABEL}")
    load = (result.get("cost") or {}).get("server_load") or {}
    if load.get("usd") is not None:
        lines.append(f"  server load {_num(load.get('seconds'), '.1f')} s = {_usd(load['usd'])}, apart from the "
                     "figures")
    if server.get("log"):
        lines.append(f"  server log  {server['log']}")
    return lines
