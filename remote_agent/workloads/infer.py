"""The traced-inference workload for one batch size (one fresh process per size).

compile (timed apart) -> warm-up -> measure until both ``min_iters`` requests and
``duration`` seconds.  Every request is timed host to host (input copy, run,
output on the host), percentiles come from every request, and a ``latency``
event summarises each window of at least 0.5 s while it runs.
"""
from __future__ import annotations

import json
import time
from typing import Any, List

from remote_agent.eventlog import WorkerEvents
from remote_agent.stats import latency_summary_ms, percentile
from remote_agent.workloads.models import create_model, input_shape
from remote_agent.workloads.train import Phase

WINDOW_S = 0.5
P99_MIN_REQUESTS = 100


def _window_event(events: WorkerEvents, batch_size: int, window: List[float]) -> None:
    ms = [x * 1000.0 for x in window]
    events.emit("latency", batch_size=batch_size, count=len(ms), p50_ms=percentile(ms, 50),
                p90_ms=percentile(ms, 90), p99_ms=percentile(ms, 99))


def run_infer(spec: Any, backend: Any, events: WorkerEvents, summary_path: str, phase: Phase,
              batch_size: int, workdir: str) -> None:
    import torch

    events.emit("phase", name="setup", state="start", batch_size=batch_size)
    model = create_model(spec).eval()
    channels, height, width = input_shape(model, spec)
    dtype = torch.bfloat16 if spec.precision == "bf16" else torch.float32
    model = model.to(dtype=dtype)
    feed = backend.inference_batch(batch_size)
    torch.manual_seed(spec.seed)
    example = torch.randn(batch_size, channels, height, width, dtype=dtype)
    request = torch.randn(feed, channels, height, width, dtype=dtype)
    events.emit("phase", name="setup", state="end", batch_size=batch_size)

    phase.name = "compile"
    events.emit("phase", name="compile", state="start", batch_size=batch_size)
    started = time.perf_counter()
    run = backend.compile_for_inference(model, example, workdir)
    compile_s = time.perf_counter() - started
    events.emit("phase", name="compile", state="end", batch_size=batch_size, seconds=compile_s)

    phase.name = "warmup"
    events.emit("phase", name="warmup", state="start", batch_size=batch_size)
    for _ in range(spec.warmup):
        run(request)
    events.emit("phase", name="warmup", state="end", batch_size=batch_size)

    phase.name = "measure"
    events.emit("phase", name="measure", state="start", batch_size=batch_size)
    latencies: List[float] = []
    window: List[float] = []
    clock = time.perf_counter
    begin = window_start = clock()
    while True:
        t0 = clock()
        run(request)
        t1 = clock()
        latencies.append(t1 - t0)
        window.append(t1 - t0)
        if t1 - window_start >= WINDOW_S:
            _window_event(events, batch_size, window)
            window, window_start = [], t1
        if len(latencies) >= spec.min_iters and t1 - begin >= spec.duration:
            break
    wall = clock() - begin
    if window:
        _window_event(events, batch_size, window)
    events.emit("phase", name="measure", state="end", batch_size=batch_size)

    warnings = []
    if len(latencies) < P99_MIN_REQUESTS:
        warnings.append("p99 at batch %d comes from %d requests (fewer than %d): treat it as rough"
                        % (batch_size, len(latencies), P99_MIN_REQUESTS))
    summary = {
        "batch_size": batch_size,
        "samples_per_request": feed,
        "compile_s": compile_s,
        "iterations": len(latencies),
        "wall_s": wall,
        "latency_ms": latency_summary_ms(latencies),
        "throughput_per_s": len(latencies) * feed / wall,
        "p99_reliable": len(latencies) >= P99_MIN_REQUESTS,
        "backend": backend.describe(),
        "warnings": warnings,
    }
    with open(summary_path, "w") as handle:
        json.dump(summary, handle)
