"""The figures of a finished run, as its live view's status line shows them (rich text, no Qt).

While a run goes on, the line quotes the rolling window of the last steady steps; once
it ends, the Result's own figures replace them: the steady window's median step time
with its 95 % interval, the throughput, and for a priced run the cost per 1M samples
or inferences, in the CLI summary's formats (``app/cli/text.py``), so the two agree.
Every figure of a finished run goes through ``result_parts``: text models' tokens/s,
why a ``--target-ci`` run stopped, the MFU (and on Neuron, neuron-monitor's own TFLOP/s beside it) and the
numerical check's mark are parts there.
"""
from __future__ import annotations

import html
from typing import Any

from app.core.mfu import mfu_text, monitor_of, monitor_text
from app.core.model_text import check_mark
from app.core.numbers import NA, usd
from app.core.quoting import clean
from app.core.target_ci import stop_text


def _num(value: float | None, fmt: str) -> str:
    return NA if value is None else format(value, fmt)


def _bold(text: str) -> str:
    return f"<b>{text}</b>"


def _efficiency(part: dict[str, Any], training: bool) -> list[str]:
    """Why it stopped (a run with ``--target-ci``) and its MFU (once FLOPs were counted), as the CLI says them."""
    parts = []
    stop = stop_text(part, training)
    if stop:
        parts.append(f"stopped {stop}")
    if part.get("mfu") is not None:  # where no peak is known (a CPU) the summary and compare say why; not here
        parts.append(f"MFU {_bold(mfu_text(part['mfu']))}")
    monitor = monitor_of(part)
    if monitor is not None:  # on Neuron: the tool's own count beside ours (nothing elsewhere)
        parts.append(html.escape(monitor_text(monitor)))
    return parts


def _check(check: dict[str, Any] | None) -> str:
    """The numerical check's mark (``check ok``, ``check WRONG``, ``check NaN``), or nothing when not checked."""
    return f"check {_bold(check_mark(check))}" if check else ""


def train_parts(result: dict[str, Any]) -> list[str]:
    """Steps measured, the median step time and its interval, throughput (and tokens/s), $ per 1M, the check."""
    train = result.get("train") or {}
    step = train.get("step_time_s") or {}
    ci = step.get("ci95") or [None, None]
    tokens = train.get("throughput_tokens_per_s")
    parts = [f"{train.get('steps_measured', NA)} of {train.get('steps_total', NA)} steps measured",
             f"step time median {_bold(_num(step.get('median'), '.4f') + ' s')} "
             f"(95% CI {_num(ci[0], '.4f')}–{_num(ci[1], '.4f')})",
             f"throughput {_bold(_num(train.get('throughput_samples_per_s'), '.2f') + ' samples/s')}"
             + (f" · {_bold(f'{tokens:,.0f} tokens/s')}" if tokens else "")]
    cost = result.get("cost") or {}
    if cost.get("usd_per_1m_samples") is not None:
        parts.append(f"{_bold(usd(cost['usd_per_1m_samples']))} per 1M samples"
                     + (f", {_bold(usd(cost['usd_per_1m_tokens']))} per 1M tokens"
                        if cost.get("usd_per_1m_tokens") is not None else ""))
    parts += _efficiency(train, True)
    if train.get("check"):
        parts.append(_check(train["check"]))
    return parts


def infer_parts(result: dict[str, Any]) -> list[str]:
    """One part per batch size (and sequence length): p50, p99 (rough under 100 requests), throughput and
    tokens/s, $ per 1M inferences, the check."""
    cost = result.get("cost") or {}
    per_1m = {(row.get("batch_size"), row.get("seq_len")): row for row in cost.get("usd_per_1m_inferences") or []}
    parts = []
    for row in result.get("infer") or []:
        latency = row.get("latency_ms") or {}
        rough = "" if row.get("p99_reliable", True) else " (rough: under 100 requests)"
        seq = f" seq {row['seq_len']}" if row.get("seq_len") is not None else ""
        text = (f"batch {row.get('batch_size')}{seq}: p50 {_bold(_num(latency.get('p50'), '.2f') + ' ms')}, "
                f"p99 {_bold(_num(latency.get('p99'), '.2f') + ' ms')}{rough}, "
                f"{_bold(_num(row.get('throughput_per_s'), '.1f') + ' samples/s')}")
        if row.get("tokens_per_s"):
            text += f" · {_bold(format(row['tokens_per_s'], ',.0f') + ' tokens/s')}"
        priced = per_1m.get((row.get("batch_size"), row.get("seq_len"))) or {}
        if priced.get("usd_per_1m") is not None:
            text += f", {_bold(usd(priced['usd_per_1m']))} per 1M inferences"
        for extra in _efficiency(row, False):
            text += ", " + extra
        if row.get("check"):
            text += ", " + _check(row["check"])
        parts.append(text)
    return parts


def serve_parts(result: dict[str, Any]) -> list[str]:
    """Per shape, its operating point: ``16/16 at c=4 (goodput): TTFT p99 84 ms, 240.1 output tok/s, $0.12 per 1M
    output tokens``, or the sentence of an SLO no load met."""
    from app.core.serve_points import operating_points

    costs = {(c.get("input_len"), c.get("output_len")): c.get("usd_per_1m_output_tokens")
             for c in (result.get("cost") or {}).get("usd_per_1m_output_tokens") or [] if isinstance(c, dict)}
    parts = []
    for point in operating_points(result):
        where = f"{point.get('input_len')}/{point.get('output_len')}"
        if point.get("slo_unmet"):
            parts.append(f"{where}: {html.escape(clean(point['slo_unmet']))}")
            continue
        text = (f"{where} at {html.escape(str(point.get('load_name')))} ({point['operating_point']}): TTFT p99 "
                f"{_bold(_num((point.get('ttft_ms') or {}).get('p99'), '.3g') + ' ms')}, TPOT p99 "
                f"{_bold(_num((point.get('tpot_ms') or {}).get('p99'), '.3g') + ' ms')}, "
                f"{_bold(_num(point.get('output_tok_s'), ',.1f'))} output tok/s")
        price = costs.get((point.get("input_len"), point.get("output_len")))
        if price is not None:
            text += f", {_bold(usd(price))} per 1M output tokens"
        parts.append(text)
    return parts


def generate_parts(result: dict[str, Any]) -> list[str]:
    """Per sweep point: ``b4 32/16: TTFT p50 12.3 ms, TPOT p50 4.56 ms, 812.3 output tok/s, $0.12 per 1M
    output tokens, check ok``."""
    costs = {(c.get("batch_size"), c.get("input_len"), c.get("output_len")): c.get("usd_per_1m_output_tokens")
             for c in (result.get("cost") or {}).get("usd_per_1m_output_tokens") or []}
    parts = []
    for point in result.get("generate") or []:
        where = f"b{point.get('batch_size')} {point.get('input_len')}/{point.get('output_len')}"
        if point.get("error"):
            parts.append(f"{where}: {html.escape(clean(str(point['error'].get('kind'))))}")
            continue
        text = (f"{where}: TTFT p50 {_bold(_num((point.get('ttft_ms') or {}).get('p50'), '.3g') + ' ms')}, "
                f"TPOT p50 {_bold(_num((point.get('tpot_ms') or {}).get('p50'), '.3g') + ' ms')}, "
                f"{_bold(_num(point.get('output_tok_s'), ',.1f'))} output tok/s")
        price = costs.get((point.get("batch_size"), point.get("input_len"), point.get("output_len")))
        if price is not None:
            text += f", {_bold(usd(price))} per 1M output tokens"
        check = _check(point.get("check"))
        parts.append(text + (f", {check}" if check else ""))
    return parts


def result_parts(result: dict[str, Any]) -> list[str]:
    """The finished line's parts (rich text); empty when the Result holds no figure (a run that failed early)."""
    if result.get("train") and (result["train"].get("step_time_s") or {}).get("median") is not None:
        return train_parts(result)
    if result.get("generate"):
        return generate_parts(result)
    if result.get("serve"):
        return serve_parts(result)
    return infer_parts(result)


def result_line(result: dict[str, Any]) -> str:
    """The status line of a finished run: its figures, or why there are none."""
    parts = result_parts(result)
    refused = (result.get("events_refused") or {}).get("count")  # the agent's lines protocol v1 refused
    tail = f" · {_bold(f'{refused:,}')} event{'s' if refused != 1 else ''} refused" if refused else ""
    if parts:
        return " · ".join(parts) + tail
    message = str((result.get("error") or {}).get("message") or "").strip()
    first = clean(message.splitlines()[0]) if message else ""  # the whole sentence is in the error panel
    return f"no figures: the run {result.get('status', 'ended')}" + (f" ({html.escape(first)})" if first else "") + tail
