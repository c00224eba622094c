"""Reading the LLM workloads' Result blocks: the figures compare, cost, reports and the app show.

``generate`` (one process per sweep point, remote_agent/workloads/generate.py) and ``serve`` (one block
per load level) carry the same distributions, from remote_agent/llm_figures.py: ``ttft_ms``, ``tpot_ms``,
``itl_ms`` and ``e2e_ms`` as {p50, p90, p99, mean, ci95, n, p99_flag}, and rates in tokens/s.  Here
each point becomes the flat figures a table row carries, named once for every reader:

    ttft_p50_ms  ttft_p99_ms  tpot_p50_ms  tpot_p99_ms  e2e_p50_ms  e2e_p99_ms
    output_tok_s (B N / E2E)  total_tok_s (B (S + N) / E2E: prompt + output, labelled so everywhere)
    usd_per_1m_output_tokens  usd_per_1m_total_tokens

Missing stays None ("N/A"), never 0.
"""
from __future__ import annotations

from typing import Any

from app.core.cost import usd_per_million

LLM_WORKLOADS = ("generate", "serve")
# (row key, short header, unit) in the order tables show them; every LLM table uses this list.
LLM_COLUMNS = (
    ("ttft_p50_ms", "TTFT p50", "ms"),
    ("ttft_p99_ms", "TTFT p99", "ms"),
    ("tpot_p50_ms", "TPOT p50", "ms"),
    ("tpot_p99_ms", "TPOT p99", "ms"),
    ("output_tok_s", "output tok/s", "tok/s"),
    ("usd_per_1m_output_tokens", "$/1M out", "$"),
)
TOTAL_TOKENS_LABEL = "prompt + output tokens"
FIGURE_KEYS = ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "e2e_p50_ms", "e2e_p99_ms",
               "output_tok_s", "total_tok_s", "prefill_tok_s", "decode_tok_s", "input_len", "output_len")


def _stat(point: dict[str, Any], metric: str, stat: str) -> float | None:
    return (point.get(metric) or {}).get(stat)


def llm_figures(point: dict[str, Any]) -> dict[str, Any]:
    """The flat figures of one generate sweep point or serve level (None where not measured)."""
    return {
        "input_len": point.get("input_len"), "output_len": point.get("output_len"),
        "ttft_p50_ms": _stat(point, "ttft_ms", "p50"), "ttft_p99_ms": _stat(point, "ttft_ms", "p99"),
        "tpot_p50_ms": _stat(point, "tpot_ms", "p50"), "tpot_p99_ms": _stat(point, "tpot_ms", "p99"),
        "e2e_p50_ms": _stat(point, "e2e_ms", "p50"), "e2e_p99_ms": _stat(point, "e2e_ms", "p99"),
        "output_tok_s": point.get("output_tok_s"), "total_tok_s": point.get("total_tok_s"),
        "prefill_tok_s": point.get("prefill_tok_s"), "decode_tok_s": point.get("decode_tok_s"),
        "llm_p99_reliable": (_stat(point, "ttft_ms", "n") or 0) >= 100,
    }


def empty_figures() -> dict[str, Any]:
    """The same keys, all None: rows of other workloads carry them so every table has one shape."""
    return {key: None for key in FIGURE_KEYS} | {"llm_p99_reliable": None, "usd_per_1m_output_tokens": None,
                                                 "usd_per_1m_total_tokens": None}


def llm_cost(usd_per_hour: float | None, figures: dict[str, Any]) -> dict[str, Any]:
    """$ per 1M output tokens, and per 1M prompt + output tokens (labelled), at the hourly price."""
    return {"usd_per_1m_output_tokens": usd_per_million(usd_per_hour, figures.get("output_tok_s")),
            "usd_per_1m_total_tokens": usd_per_million(usd_per_hour, figures.get("total_tok_s"))}


def generate_points(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The measured sweep points of a generate Result (a point that failed, e.g. an OOM, is left out)."""
    return [p for p in result.get("generate") or [] if isinstance(p, dict) and not p.get("error")]


def shape_text(point: dict[str, Any]) -> str:
    """``batch 4, 128 in / 128 out``."""
    return f"batch {point.get('batch_size')}, {point.get('input_len')} in / {point.get('output_len')} out"


def job_text(requests: int, input_len: int | None, output_len: int | None) -> str:
    """``1,000,000 requests of 128 in / 128 out``: the job box's words for an LLM job."""
    return f"{requests:,} requests of {input_len} in / {output_len} out"


def job_tokens(requests: float, output_len: int | None) -> float | None:
    """Output tokens of a job of ``requests`` requests, each ``output_len`` new tokens."""
    return None if not output_len else requests * output_len


def job_hours(requests: float, output_len: int | None, output_tok_s: float | None) -> float | None:
    """Hours the job takes at the measured output rate (prompt work is inside that rate)."""
    tokens = job_tokens(requests, output_len)
    if tokens is None or not output_tok_s or output_tok_s <= 0:
        return None
    return tokens / output_tok_s / 3600.0
