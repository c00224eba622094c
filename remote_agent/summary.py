"""Turning a run's measurements into the Result JSON (DESIGN.md §4 and §5)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from remote_agent.stats import describe, tukey_outliers
from remote_agent.stopping import median_ci_pct

RESULT_SCHEMA = "neuronbench.result/1"


def summarize_train(steps: List[Dict[str, Any]], warmup: int, worker: Dict[str, Any],
                    warnings: List[str]) -> Dict[str, Any]:
    """The ``train`` block from rank 0's step events and the worker's summary.

    The steady window starts after ``warmup`` steps *and* after the last step
    that compiled; compiled steps are listed and their time reported apart.
    """
    compiled = [s["i"] for s in steps if s.get("compiled")]
    start_after = max([warmup] + compiled)
    window = [s for s in steps if s["i"] > start_after]
    late = [i for i in compiled if i > warmup]
    if late:
        warnings.append("step(s) %s compiled after the %d warm-up steps (a recompilation): the steady window "
                        "starts after step %d" % (", ".join(str(i) for i in late), warmup, start_after))
    times = [s["dt_s"] for s in window]
    throughput: Optional[float] = None
    if window:
        throughput = sum(s["samples"] for s in window) / sum(times)
        outliers = tukey_outliers(times)
        if outliers:
            worst = max(times[i] for i in outliers)
            warnings.append("%d measured step(s) lie beyond 3 interquartile ranges (slowest %.4f s); they are "
                            "kept in the figures" % (len(outliers), worst))
    elif steps:
        warnings.append("no steady step to measure: every step after warm-up compiled; raise --steps")
    data_wait = sum(s.get("data_s", 0.0) for s in window)
    if window and data_wait > 0.1 * sum(times):
        warnings.append("the data loader held up %.0f%% of the measured time: raise --workers, or measure the "
                        "device alone with --data device" % (100.0 * data_wait / sum(times)))
    return {
        "steps_total": len(steps),
        "steps_measured": len(window),
        "window": [window[0]["i"], window[-1]["i"]] if window else None,
        "world_size": worker.get("world_size"),
        # A run cancelled (or failed) before its worker wrote a summary still knows its batch from its steps.
        "global_batch": worker.get("global_batch") or (steps[0].get("samples") if steps else None),
        "input_shape": (worker.get("model") or {}).get("input_shape"),
        "param_dtype": worker.get("param_dtype"),
        # Which input ran: the seed's host loader (and its workers) or one batch on the device.
        "data": worker.get("data"),
        "compile": dict({
            "seconds": worker.get("compile_seconds", 0.0),
            "count": worker.get("compile_count", 0),
            "steps": compiled,
            "steps_wall_s": sum(s["dt_s"] for s in steps if s.get("compiled")),
        }, **(worker.get("compile") or {})),
        "step_time_s": describe(times),
        "throughput_samples_per_s": throughput,
        # Text models: tokens/s beside samples/s (each sample is one sequence of seq_len tokens).
        "tokens_per_sample": worker.get("tokens_per_sample"),
        "throughput_tokens_per_s": throughput * worker["tokens_per_sample"]
        if throughput is not None and worker.get("tokens_per_sample") else None,
        # The first step's loss against the eager model on CPU in fp32 (null: --no-check).
        "check": worker.get("check"),
        # Why the loop ended (target_ci: the figure was known; steps: the cap) and the median's interval reached.
        **stopping_fields(worker.get("stopping"), median_ci_pct(times) if times else None),
        # FLOPs of one sample's forward + backward and what the run achieved (MFU is the app's: it has the peaks).
        **flops_fields(worker.get("flops"), throughput),
    }


def stopping_fields(stopping: Optional[Dict[str, Any]], ci_pct: Optional[float]) -> Dict[str, Any]:
    stopping = stopping or {}
    return {"stopped_by": stopping.get("stopped_by"), "target_ci_pct": stopping.get("target_ci_pct"),
            "ci_pct": ci_pct}


def flops_fields(flops: Optional[Dict[str, Any]], samples_per_s: Optional[float]) -> Dict[str, Any]:
    """``flops_per_sample``, how it was counted, and ``achieved_tflops`` = FLOPs x samples/s."""
    flops = flops or {}
    per_sample = flops.get("flops_per_sample")
    return {"flops_per_sample": per_sample, "flops_counted_on": flops.get("counted_on"),
            "matmul_dtype": flops.get("matmul_dtype"),
            "achieved_tflops": per_sample * samples_per_s / 1e12 if per_sample and samples_per_s else None}


def summarize_infer(size: Dict[str, Any]) -> Dict[str, Any]:
    """One ``infer`` row from the summary of a worker of one batch size (and sequence length)."""
    keys = ("batch_size", "seq_len", "samples_per_request", "compile_s", "compile", "iterations", "wall_s",
            "latency_ms",
            "throughput_per_s", "tokens_per_s", "p99_reliable", "check", "data_parallel")
    row = {key: size.get(key) for key in keys}
    stopping = size.get("stopping") or {}
    row.update(stopping_fields(stopping, stopping.get("ci_pct")))
    row.update(flops_fields(size.get("flops"), size.get("throughput_per_s")))
    return row


def summarize_generate(point: Dict[str, Any]) -> Dict[str, Any]:
    """One ``generate`` sweep point from its worker's summary (DESIGN.md §11; figures: llm_figures).

    A point that failed (an OOM at this batch size) keeps its shape and ``error``, every figure null.
    """
    keys = ("batch_size", "input_len", "output_len", "load_s", "compile_s", "compile_note", "first_call_s",
            "first_call", "warmup_calls", "calls", "wall_s", "ttft_ms", "tpot_ms", "itl_ms", "e2e_ms",
            "prefill_tok_s", "decode_tok_s", "output_tok_s", "total_tok_s", "check", "memory", "error")
    row = {key: point.get(key) for key in keys}
    stopping = point.get("stopping") or {}
    row.update(stopping_fields(stopping, stopping.get("ci_pct")))
    backend = point.get("backend") or {}
    row["stack"] = backend.get("stack")
    row["cache"] = backend.get("cache")
    compile_block = backend.get("compile") or {}  # the native Neuron stack's: cold or warm, the ops that fell back
    row["compile_state"] = compile_block.get("state")
    row["fallback_ops"] = list(backend.get("fallback_ops") or [])
    flops = point.get("flops") or {}
    prefill, decode = flops.get("prefill_flops_per_row"), flops.get("decode_flops_per_token")
    s_in = point.get("input_len")
    row.update(prefill_flops_per_row=prefill, decode_flops_per_token=decode, matmul_dtype=flops.get("matmul_dtype"),
               flops_missing=flops.get("missing"),
               # prefill: rows/s = prefill tok/s / S; decode: one token per row a step
               achieved_prefill_tflops=prefill * point["prefill_tok_s"] / s_in / 1e12
               if prefill and point.get("prefill_tok_s") and s_in else None,
               achieved_decode_tflops=decode * point["decode_tok_s"] / 1e12
               if decode and point.get("decode_tok_s") else None)
    return row


def failed_point(batch_size: Optional[int], seq_len: Optional[int], lengths: Optional[Any],
                 error: Dict[str, Any]) -> Dict[str, Any]:
    """A sweep point whose process failed before it wrote a summary: its shape and sentence, no figure."""
    point: Dict[str, Any] = {"batch_size": batch_size,
                             "error": {"kind": error.get("kind"), "message": error.get("message")}}
    if lengths is not None:
        point.update(input_len=lengths[0], output_len=lengths[1])
    elif seq_len is not None:
        point["seq_len"] = seq_len
    return point


def run_status(cancelled: bool, error: Optional[Dict[str, Any]], points: List[Dict[str, Any]]) -> str:
    """ok, failed, cancelled, or partial: a sweep where some points finished and some failed keeps the finished
    ones (the commonest sweep there is: the batch sizes that fit are the answer, the one that did not the limit)."""
    if cancelled:
        return "cancelled"
    if not error:
        return "ok"
    failed = [p for p in points if p.get("error")]
    return "partial" if failed and len(failed) < len(points) else "failed"


def compose_result(run_id: str, spec: Dict[str, Any], env: Optional[Dict[str, Any]], status: str,
                   error: Optional[Dict[str, Any]], backend: Optional[Dict[str, Any]],
                   train: Optional[Dict[str, Any]], infer: Optional[List[Dict[str, Any]]],
                   warnings: List[str], telemetry: Optional[Dict[str, Any]] = None,
                   model: Optional[Dict[str, Any]] = None,
                   generate: Optional[List[Dict[str, Any]]] = None,
                   serve: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The Result JSON (DESIGN.md §4); ``telemetry`` is remote_agent.monitor.digest's block, ``model``
    what was built (source, class, parameters, sha256, inputs, library versions)."""
    return {
        "schema": RESULT_SCHEMA,
        "run_id": run_id,
        "host": None,  # the app fills in the host name it knows the machine by
        "workload": spec.get("workload"),
        "backend": (backend or {}).get("name") or spec.get("backend"),
        "backend_detail": backend,
        "status": status,
        "error": {"kind": error["kind"], "message": error["message"]} if error else None,
        "spec": spec,
        "model": model,
        "env": env,
        "train": train,
        "infer": infer,
        "generate": generate,
        # The serve workload's levels, SLO and operating point (remote_agent/workloads/serve.py).
        "serve": serve,
        "cost": None,
        "telemetry": telemetry,
        "warnings": warnings,
    }
