"""The live view's status line while a run goes on: the rolling figures of each workload, the interval as it shrinks,
the rolling MFU and the host's newest sample (a finished run's line is the Result's: app/ui/models/result_line.py).

Split from live_run_view.py (past 500 lines); rich text for a QLabel, no widget here.
"""
from __future__ import annotations

import contextlib

import numpy as np

from app.core.errors import NeuronBenchError
from app.core.mfu import live_mfu, mfu_text
from app.core.serve_levels import level_error_rate
from app.core.step_window import ROLLING_STEPS
from app.core.target_ci import interval_text
from app.services.peaks import load_peak_table
from app.ui.models.run_state import LiveRunState


def num(value: float | None, fmt: str, unit: str = "") -> str:
    return "N/A" if value is None else f"{value:{fmt}}{unit}"


def known_figures(state: LiveRunState) -> list[str]:
    """The interval as it shrinks (``±3.1 % (target ±2 %)``) and the rolling MFU while the run goes (a finished
    run's line is the Result's: app/ui/models/result_line.py)."""
    parts = []
    if state.ci_pct is not None:
        parts.append("95% interval " + interval_text(state.ci_pct, getattr(state.spec, "target_ci", None)))
    mfu = None
    if state.compute.get("flops_per_sample"):
        with contextlib.suppress(NeuronBenchError):
            mfu = live_mfu(state.compute, state.env, state.latest_throughput(), load_peak_table())
    if mfu is not None:
        parts.append(f"MFU <b>{mfu_text(mfu)}</b>")
    return parts


def live_text(state: LiveRunState) -> str:
    """The status line while the run goes on: the rolling figures and the host's newest sample."""
    parts = []
    if state.spec.workload == "serve":
        level = state.serve_levels[-1] if state.serve_levels else None
        if level is None:
            return "no load level finished yet"
        where = f"c={level.get('concurrency')}" if level.get("rate") is None else f"{level['rate']:.3g}/s"
        parts.append(f"{len(state.serve_levels)} level(s); last {where}")
        for label, metric in (("TTFT p99", "ttft_ms"), ("TPOT p99", "tpot_ms")):
            parts.append(f"{label} <b>{num((level.get(metric) or {}).get('p99'), '.3g', ' ms')}</b>")
        parts.append(f"output <b>{num(level.get('output_tok_s'), ',.1f', ' tok/s')}</b>")
        rate = level_error_rate(level)  # a failed request is never good: its share shows beside the figures
        parts.append(f"errors <b>{num(None if rate is None else 100 * rate, '.3g', '%')}</b>"
                     + (f" ({level['errors']})" if level.get("errors") else ""))
        return " · ".join(parts)
    if state.spec.workload == "generate":
        call = state.gen_calls.last()
        for label, column in (("TTFT", 1), ("TPOT", 2)):
            value = None if call is None or np.isnan(call[column]) else float(call[column])
            parts.append(f"{label} <b>{num(value, '.2f', ' ms')}</b>")
        parts.append(f"output <b>{num(state.latest_throughput(), ',.1f', ' tok/s')}</b>")
        parts.extend(known_figures(state))
        return " · ".join(parts)
    if state.spec.workload == "train":
        parts.append(f"step {state.progress.step}/{state.spec.steps}")
        parts.append(f"step time (median of last {ROLLING_STEPS}) "
                     f"<b>{num(state.latest_step_median(), '.4f', ' s')}</b>")
    else:
        lat = state.latest_latency()
        parts.append(f"p50 <b>{num(lat[0] if lat else None, '.2f', ' ms')}</b>")
        parts.append(f"p99 <b>{num(lat[2] if lat else None, '.2f', ' ms')}</b>")
    parts.append(f"throughput <b>{num(state.latest_throughput(), ',.1f', ' samples/s')}</b>")
    tokens = state.latest_tokens_per_s()  # text models: tokens/s beside samples/s
    if tokens is not None:
        parts[-1] += f" · <b>{tokens:,.0f} tokens/s</b>"
    parts.extend(known_figures(state))
    cpu, mem = state.latest_host()
    parts.append(f"host CPU {num(cpu, '.0f', '%')}")
    parts.append(f"memory {num(mem, '.0f', '%')}")
    if state.refused:  # lines of the agent's that protocol v1 refused (the log says why)
        parts.append(f"<b>{state.refused:,}</b> event{'s' if state.refused != 1 else ''} refused")
    return " · ".join(parts)
