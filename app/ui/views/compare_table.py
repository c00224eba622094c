"""The comparison's table: a row per run and shape (batch size, sequence length, LLM shape), its columns and tips.

Split from compare_view.py (past 500 lines); the view fills it with ``fill_table`` and hides the columns no compared
run needs.  A serve row's shape is its prompt/new tokens at its operating load (never "None").
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QTableWidget, QTableWidgetItem

from app.core.compare import stack_text
from app.core.cost import TYPE_FROM_AFTER_RUN, type_from_label
from app.core.mfu import mfu_sentence, mfu_text
from app.core.model_text import check_mark_of
from app.core.numbers import figure, usd
from app.core.quoting import SENTENCE_LIMIT, clean

MONITOR = "neuron-monitor TFLOP/s"  # shown only where a compared run ran under neuron-monitor
LLM_HEADERS = ("TTFT p50 ms", "TTFT p99 ms", "TPOT p50 ms", "TPOT p99 ms")  # shown where an LLM run is compared
COLUMNS = ("Run", "Host", "Workload", "Stack", "Batch", "Throughput", "95% CI", "MFU", MONITOR, "p50 ms", "p99 ms",
           *LLM_HEADERS, "$/h",
           "Price source", "$ per 1M", "Work per $ vs baseline", "Speed vs baseline", "Difference", "Check",
           "Benchmark $")
COLUMN_TIPS = {
    "Run": "the stored run", "Host": "instance type (host name where two hosts share one)",
    "Workload": "training or inference",
    "Stack": "Neuron's device stack (native TorchNeuron or xla) and its compile: cold, warm (NEFF cache) or loaded "
             "(a cached traced artefact); ! when ops fell back to the host CPU",
    "Batch": "batch size (per process for training)",
    "Throughput": "samples/s (training) or inferences/s (inference); the median of repeats where there are",
    "95% CI": "bootstrap 95% interval of the median, from repeats (--repeats 3 or more); none for a single run",
    "p50 ms": "median request latency (inference)", "p99 ms": "99th percentile latency (inference; needs 100 "
                                                             "requests, marked ~ when fewer)",
    "$/h": "hourly price of the instance type, from the price book",
    "Price source": "where the hourly price comes from, and its date",
    "$ per 1M": "cost per million samples or inferences (generate: output tokens): $/h / 3600 / throughput x 1e6",
    "Work per $ vs baseline": "samples (or inferences) per dollar relative to the baseline run: >1 is cheaper work",
    "Speed vs baseline": "throughput relative to the baseline run",
    "Difference": "whether the difference from the baseline is significant (95% intervals of repeats)",
    "Benchmark $": "what the benchmark itself cost: launch to terminate on an instance NeuronBench launched, "
                   "else the run's start to end (setup and compile included), at the price",
    "Check": "the compiled model against the eager model on CPU (fp32), on fresh inputs: ok, or WRONG / NaN when "
             "its answers differ beyond the tolerance (its figures then measure a model that computes something else)",
    MONITOR: "neuron-monitor's own count of the FLOP/s while measuring, summed over the NeuronCores, beside our "
             "MFU (Neuron runs only)",
    "MFU": "model FLOPs utilisation: FLOPs per sample x samples/s / the dense peak of the devices used, for the "
           "dtype the matmuls ran in (N/A where no peak is known, e.g. a CPU)",
    "TTFT p50 ms": "generate: time to first token, call start to the first new token (median of the calls)",
    "TTFT p99 ms": "generate: 99th percentile time to first token (rough under 100 calls)",
    "TPOT p50 ms": "generate: time per output token after the first, (E2E - TTFT) / (N - 1), median of the calls",
    "TPOT p99 ms": "generate: 99th percentile time per output token",
}
SOURCE_COLUMN_WIDTH = 260  # a price source is long (a catalog path and commit): elided, whole on its tooltip
WORKLOADS = {"train": "training", "infer": "inference", "generate": "generate", "serve": "serve"}


def host_cell(row: dict[str, Any]) -> str:
    """The row's host label, saying so when its instance type was declared after the run."""
    if row.get("instance_type_from") == TYPE_FROM_AFTER_RUN:
        return f"{row['label']} ({type_from_label(TYPE_FROM_AFTER_RUN)})"
    return row["label"]


def _ms(value: float | None) -> str:
    return figure(value, 3)


def _ratio(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.2f}×"


def category(row: dict[str, Any]) -> tuple[int, int]:
    """The x group a bar stands in, training first: training runs compare whatever their batch size;
    inference per batch size."""
    if row["workload"] == "train":
        return (0, 0)
    if row.get("output_len") is not None:  # LLM rows after inference's, per batch size
        return (2, int(row["batch_size"] or 0))
    return (1, int(row["batch_size"] or 0))


def category_label(key: tuple[int, int]) -> str:
    return "training" if key[0] == 0 else f"batch {key[1]}" + (" (generate)" if key[0] == 2 else "")


def difference(group: dict[str, Any] | None) -> str:
    """The flag DESIGN.md asks for, in words."""
    if group is None:
        return ""
    if group["is_baseline"]:
        return "baseline"
    if group["faster_significant"] is False or group["overlaps_with"]:
        return "not a significant difference"
    if group["faster_significant"]:
        return "significant (95% intervals apart)"
    return "not tested (single runs)" if group["baseline_label"] else ""


def shape_cell(row: dict[str, Any]) -> str:
    """``8``, ``4, seq 128``, ``2, 16 in / 8 out`` (generate), ``16 in / 8 out at c=4`` (serve)."""
    if row.get("workload") == "serve":
        return f"{row['input_len']} in / {row['output_len']} out at {row.get('load_name') or 'no level met the SLO'}"
    return (str(row["batch_size"]) + (f", seq {row['seq_len']}" if row.get("seq_len") is not None else "")
            + (f", {row['input_len']} in / {row['output_len']} out" if row.get("output_len") is not None else ""))


def fill_table(table: QTableWidget, doc: dict[str, Any], order: list[str],
               group_of: Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None]) -> None:
    """One row per run and shape, in ``order`` within each workload; columns no compared run needs are hidden."""
    rows = sorted(doc["rows"], key=lambda r: (category(r), order.index(r["run_id"])))
    table.setRowCount(len(rows))
    billed: set[str] = set()  # a run's benchmark cost once, on its first row (not once per batch size)
    for index, row in enumerate(rows):
        group = group_of(doc, row)
        ci = group["ci95"] if group and group["n"] >= 2 else None
        p99 = _ms(row["latency_p99_ms"])
        if row["latency_p99_ms"] is not None and row["p99_reliable"] is False:
            p99 = "~" + p99
        checked = row.get("check_agrees") is not None or row.get("check_finite") is not None
        mark = check_mark_of(row.get("check_agrees"), row.get("check_finite"), checked)
        tokens = f" · {figure(row['tokens_per_s'])} tokens/s" if row.get("tokens_per_s") else ""
        per_token = f" · {usd(row['usd_per_1m_tokens'])} per 1M tokens" if row.get("usd_per_1m_tokens") else ""
        llm = row.get("output_len") is not None
        if llm:  # generate: $ per 1M output tokens, and per 1M prompt + output tokens labelled so
            tokens = f" · {figure(row['tokens_per_s'])} prompt + output tok/s" if row.get("tokens_per_s") else ""
            per_token = f" output · {usd(row.get('usd_per_1m_total_tokens'))} per 1M prompt + output tokens"
        cells = [
            row["run_id"], host_cell(row), WORKLOADS.get(row["workload"], row["workload"] or ""), stack_text(row),
            str(row["batch_size"]) + (f", seq {row['seq_len']}" if row.get("seq_len") is not None else "")
            + (f", {row['input_len']} in / {row['output_len']} out" if llm else ""),
            f"{figure(row['throughput'])} {row['unit']}{tokens}",
            f"{figure(ci[0])} – {figure(ci[1])}" if ci else "—", mfu_text(row.get("mfu")),
            "" if row.get("monitor_tflops") is None else figure(row["monitor_tflops"]),
            _ms(row["latency_p50_ms"]), p99,
            *(_ms(row.get(key)) if llm else "" for key in ("ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                                                           "tpot_p99_ms")),
            usd(row["usd_per_hour"]),
            f"{row['price_source']} ({row['price_date']})" if row["price_source"] else (row["price_note"] or "N/A"),
            usd(row["usd_per_1m"]) + per_token, _ratio(row["price_performance_vs_baseline"]),
            _ratio(row["speedup_vs_baseline"]), difference(group),
            ("✗ " + mark) if mark in ("WRONG", "NaN") else mark,
            "" if row["run_id"] in billed else usd(row.get("benchmark_usd")),
        ]
        billed.add(row["run_id"])
        for col, text in enumerate(cells):
            # Host names, instance types, model names and price notes come from users and hosts.
            item = QTableWidgetItem(clean(text))
            item.setToolTip(clean(text, SENTENCE_LIMIT))
            if COLUMNS[col] in ("Throughput", MONITOR, "p50 ms", "p99 ms", *LLM_HEADERS, "$/h", "$ per 1M",
                                "Work per $ vs baseline", "Speed vs baseline", "Benchmark $"):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if COLUMNS[col] == "Host" and row["instance_type"]:
                item.setToolTip(f"{clean(row['instance_type'])}: {type_from_label(row.get('instance_type_from'))}")
            if COLUMNS[col] == "Price source":
                item.setToolTip(clean("; ".join(t for t in (text, row["price_note"]) if t), SENTENCE_LIMIT))
            elif COLUMNS[col] == "MFU":
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                item.setToolTip(clean(mfu_sentence(row["model"].split(" ")[0], row["label"], row.get("mfu"),
                                                   row.get("mfu_basis") or {"missing": row.get("mfu_missing")}),
                                      SENTENCE_LIMIT))
            elif COLUMNS[col] == "Difference" and group and group["overlaps_with"]:
                item.setToolTip(clean("95% interval overlaps " + ", ".join(group["overlaps_with"]), SENTENCE_LIMIT))
            if COLUMNS[col] == "Stack" and row.get("fallback_ops"):
                # A "Trainium" figure that ran partly on the host CPU: the user must see it.
                item.setForeground(QColor("#c62828"))
                item.setToolTip(clean("ops that fell back to the host CPU: " + ", ".join(row["fallback_ops"]),
                                      SENTENCE_LIMIT))
            if mark in ("WRONG", "NaN"):
                # A compiler that gave wrong answers: the whole row says so, its figures kept.
                item.setForeground(QColor("#c62828"))
                if COLUMNS[col] == "Check":
                    item.setToolTip(f"error {figure((row.get('check_max_rel_err') or 0) * 100)} % of the "
                                    "output's scale against eager on CPU (fp32); see the run's warnings")
            table.setItem(index, col, item)
    # No empty column where no run ran under neuron-monitor (a GPU or CPU comparison).
    table.setColumnHidden(COLUMNS.index(MONITOR), not any(r.get("monitor_tflops") is not None for r in rows))
    for header in LLM_HEADERS:  # TTFT and TPOT only where a generate (or serve) run is compared
        table.setColumnHidden(COLUMNS.index(header), not any(r.get("output_len") is not None for r in rows))
    table.setColumnHidden(COLUMNS.index("Stack"), not any(r.get("stack") for r in rows))
    table.resizeColumnsToContents()
    source = COLUMNS.index("Price source")
    table.setColumnWidth(source, min(table.columnWidth(source), SOURCE_COLUMN_WIDTH))
