"""A serve run's load levels as rows (pure): what the Sweep tab, reports and the CLI show of each level.

One row per load level, in the order run (closed-loop concurrency levels, then the SLO's Poisson rates): TTFT and
TPOT p50/p99, output tok/s, the error rate and whether the level met the SLO.  ``error_rate`` and the SLO verdict
that counts errors (remote_agent/llm_figures.serve_summary) are read as the agent wrote them.  A run stored before
``error_rate`` was kept still has its request and error counts (failed and short requests were errors then too), so
its error rate is their ratio; its SLO verdict, though, was made without counting errors (``slo_counts_errors``).
"""
from __future__ import annotations

from typing import Any

from app.core.serve_points import serve_levels
from remote_agent.llm_figures import level_meets


def level_label(level: dict[str, Any]) -> str:
    """``c=4`` or ``2.5/s``: a level's short name (a table cell, a chart's point)."""
    return f"{level['rate']:.3g}/s" if level.get("rate") is not None else f"c={level.get('concurrency')}"


def _stat(level: dict[str, Any], metric: str, stat: str) -> float | None:
    value = (level.get(metric) or {}).get(stat)
    return None if value is None else float(value)


def level_error_rate(level: dict[str, Any]) -> float | None:
    """Errors / requests of a level (0..1): the agent's own figure, or its counts' ratio for a run stored before it
    kept one; None when the level has no request."""
    if level.get("error_rate") is not None:
        return float(level["error_rate"])
    requests, errors = level.get("requests"), level.get("errors")
    return errors / requests if requests and errors is not None else None


def level_row(level: dict[str, Any], slo: dict[str, float] | None) -> dict[str, Any]:
    """One level's figures (None where the level has no value) and its verdict against ``slo`` (the limits in ms):
    judged here by the agent's own rule (llm_figures.level_meets, errors counted), so a run stored before errors
    counted gets the verdict the operating point (serve_points) is chosen by, not the one stored with it."""
    met, misses = level_meets(level, slo) if slo else (None, [])
    return {
        "load": level_label(level), "concurrency": level.get("concurrency"), "rate": level.get("rate"),
        "input_len": level.get("input_len"), "output_len": level.get("output_len"),
        "requests": level.get("requests"), "errors": level.get("errors"),
        "error_rate": level_error_rate(level),
        "ttft_p50_ms": _stat(level, "ttft_ms", "p50"), "ttft_p99_ms": _stat(level, "ttft_ms", "p99"),
        "tpot_p50_ms": _stat(level, "tpot_ms", "p50"), "tpot_p99_ms": _stat(level, "tpot_ms", "p99"),
        "output_tok_s": level.get("output_tok_s"),
        "slo_met": met, "slo_misses": misses, "has_slo": bool(slo),
    }


def level_rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Every load level of a serve Result, in the order run."""
    slo = (result.get("serve") or {}).get("slo") or None
    return [level_row(level, slo) for level in serve_levels(result)]


def slo_ttft_ms(result: dict[str, Any]) -> float | None:
    """The SLO's p99 TTFT limit in ms (the line on the latency-by-throughput chart), None without one."""
    value = ((result.get("serve") or {}).get("slo") or {}).get("ttft_p99")
    return None if value is None else float(value)


def slo_word(row: dict[str, Any]) -> str:
    """``met``, ``missed``, or ``-`` (no SLO)."""
    if not row["has_slo"]:
        return "-"
    if row["slo_met"] is None:
        return "N/A"
    return "met" if row["slo_met"] else "missed"


def error_rate_text(row: dict[str, Any]) -> str:
    """``0%``, ``33%``, ``0.5%`` or ``N/A`` (a level without a request)."""
    rate = row["error_rate"]
    if rate is None:
        return "N/A"
    return f"{rate * 100:.0f}%" if rate == 0 or rate >= 0.01 else f"{rate * 100:.2g}%"


def server_stack(result: dict[str, Any]) -> str:
    """``vllm (cpu)``, ``transformers (cpu)``, ``vllm (neuron)``, ``endpoint``: which server ran on what."""
    server = (result.get("serve") or {}).get("server") or {}
    detail = result.get("backend_detail") or {}
    name = server.get("server") or detail.get("server") or ("endpoint" if (result.get("spec") or {}).get("endpoint")
                                                            else "command")
    where = server.get("stack") or server.get("device") or detail.get("stack")
    return f"{name} ({where})" if where else str(name)
