"""CSV report: one row per run x batch size; "N/A" for every missing value (never an empty cell or 0).

The columns are fixed, whatever the runs (a script reads them by name or place): ``monitor_tflops``
(neuron-monitor's own count, Neuron only) is N/A elsewhere, as ``mfu`` is on a CPU.
"""
from __future__ import annotations

import csv
import io
from typing import Any

COLUMNS = ("run_id", "host", "label", "instance_type", "instance_type_from", "region", "workload", "model", "backend",
           "batch_size", "seq_len", "throughput", "unit", "tokens_per_s", "latency_p50_ms", "latency_p99_ms",
           "p99_reliable", "compile_s", "compile_usd", "compile_cache", "usd_per_hour", "usd_per_1m",
           "usd_per_1m_tokens", "speedup_vs_baseline", "price_performance_vs_baseline", "price_source", "price_date",
           "price_note", "market", "repeat", "instance_id", "benchmark_s", "benchmark_usd", "job_hours", "job_usd",
           "check_agrees", "check_finite", "check_max_rel_err", "achieved_tflops", "mfu", "monitor_tflops",
           "stopped_by", "target_ci_pct", "ci_pct",
           # LLM workloads (generate, serve): N/A for the others; "total" tokens are prompt + output tokens
           "input_len", "output_len", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "output_tok_s",
           "total_tok_s", "usd_per_1m_output_tokens", "usd_per_1m_total_tokens")


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "N/A"
    if isinstance(value, dict):  # repeat: {"index": 2, "of": 3}
        return f"{value.get('index')}/{value.get('of')}"
    if isinstance(value, float):
        return repr(value)  # full precision: a spreadsheet rounds for display, we do not
    return str(value)


def render_csv(doc: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in doc["rows"]:
        full = dict(row, market=doc["market"])
        writer.writerow([_cell(full.get(column)) for column in COLUMNS])
    return out.getvalue()
