"""The traced-inference workload for one batch size and sequence length (one fresh process each).

compile (timed apart) -> numerical check -> warm-up -> measure until both ``min_iters``
requests and ``duration`` seconds.  Every request is timed host to host (input copy,
run, outputs on the host), percentiles come from every request, and a ``latency``
event summarises each window of at least 0.5 s while it runs.  Neuron's shapes are
static, so each (batch size, sequence length) is its own compiled artefact.

Data parallel on the native Neuron stack (``--nproc N``): N such processes, one per logical NeuronCore
(infer_ranks.py); the lead (rank 0) speaks for them all: it alone emits events and checks numerics, and
its Result merges every process's requests (percentiles over all of them, throughput over the common window).
"""
from __future__ import annotations

import copy
import json
import os
import time
from typing import Any, Dict, List, Optional

from remote_agent.eventlog import WorkerEvents
from remote_agent.protocol import P99_MIN_REQUESTS
from remote_agent.stats import latency_summary_ms, percentile
from remote_agent.stopping import ThroughputStop
from remote_agent.workloads import check as numerics
from remote_agent.workloads.flops import count_flops, live_fields, matmul_dtype
from remote_agent.workloads.infer_ranks import InferRanks
from remote_agent.workloads.sources import load_model
from remote_agent.workloads.train import Phase
from remote_agent.workloads.under_test import traceable

WINDOW_S = 0.5


def _window_event(events: WorkerEvents, batch_size: int, seq_len: Optional[int], window: List[float],
                  ci_pct: Optional[float] = None) -> None:
    ms = [x * 1000.0 for x in window]
    extra: Dict[str, Any] = {"seq_len": seq_len} if seq_len is not None else {}
    if ci_pct is not None:
        extra["ci_pct"] = ci_pct  # the throughput's interval so far: the live view draws it shrink
    events.emit("latency", batch_size=batch_size, count=len(ms), p50_ms=percentile(ms, 50),
                p90_ms=percentile(ms, 90), p99_ms=percentile(ms, 99), **extra)


def shape_tag(batch_size: int, seq_len: Optional[int]) -> str:
    """``bs4`` or ``bs4-seq128``: names the compiled artefact of one static shape."""
    return "bs%d" % batch_size + ("" if seq_len is None else "-seq%d" % seq_len)


class _Quiet:
    """The events of a data-parallel process other than the lead: the lead speaks for all (errors still go out
    through the worker's own WorkerEvents)."""

    def emit(self, *_args: Any, **_fields: Any) -> None:
        pass


def run_infer(spec: Any, backend: Any, events: WorkerEvents, summary_path: str, phase: Phase,
              batch_size: int, workdir: str, seq_len: Optional[int] = None) -> None:
    ranks = InferRanks()
    try:
        _run_infer(spec, backend, events if ranks.lead else _Quiet(), summary_path, phase, batch_size, workdir,
                   seq_len, ranks)
    finally:
        ranks.close()


def _run_infer(spec: Any, backend: Any, events: Any, summary_path: str, phase: Phase, batch_size: int,
               workdir: str, seq_len: Optional[int], ranks: InferRanks) -> None:
    import torch

    where = {"batch_size": batch_size}
    if seq_len is not None:
        where["seq_len"] = seq_len
    events.emit("phase", name="setup", state="start", **where)
    mut = load_model(spec, batch_size, seq_len, workdir)
    mut.module.eval()
    seq_len = mut.seq_len  # a text model's default length when none was asked for
    if seq_len is not None:
        where["seq_len"] = seq_len
    # FLOPs of one request's forward at the traced batch, while the module is still fp32 on the host.
    flops = count_flops(mut, batch_size, spec.seed, False, matmul_dtype(
        spec.precision, backend.name, spec.neuron_cc_flags)) if ranks.lead else {}
    reference = traceable(mut, copy.deepcopy(mut.module)) if spec.check and ranks.lead else None
    dtype = torch.bfloat16 if spec.precision == "bf16" else torch.float32
    model = traceable(mut, mut.module.to(dtype=dtype)).eval()
    feed = backend.inference_batch(batch_size)
    example_batch = mut.make_batch(batch_size, spec.seed, False)
    example = example_batch.to("cpu", dtype).tensors()
    request = mut.make_batch(feed, spec.seed + 1, False).to("cpu", dtype).tensors()
    for note in mut.notes:
        events.emit("log", level="info", message=note)
    events.emit("phase", name="setup", state="end", backend=backend.name,
                devices=max(1, feed // batch_size) * ranks.world, **live_fields(flops), **where)

    phase.name = "compile"
    events.emit("phase", name="compile", state="start", **where)
    if not ranks.lead:
        ranks.barrier()  # the lead compiles first: the others then load its NEFFs from the host's cache
    started = time.perf_counter()
    with mut.tracing():
        run = backend.compile_for_inference(model, example, workdir, shape_tag(batch_size, seq_len))
    compile_s = time.perf_counter() - started
    if ranks.lead:
        ranks.barrier()
    events.emit("phase", name="compile", state="end", seconds=compile_s, **where)

    warnings = []
    for sentence in backend.run_warnings():  # ops that fell back to the host CPU: every view marks the run now
        events.emit("log", level="warning", message=sentence, **where)
    check: Optional[Dict[str, Any]] = None
    if reference is not None:
        phase.name = "check"
        precision = numerics.compute_precision(spec.precision, backend.name, spec.neuron_cc_flags)
        check = numerics.check_compiled(
            run, reference, lambda seed: mut.make_batch(feed, seed, False).tensors(),
            lambda tensors: tuple(t.to(dtype) if t.is_floating_point() else t for t in tensors),
            precision, "compiled model against eager on CPU (fp32)")
        del reference
        sentence = numerics.warning(check, "batch %d%s" % (batch_size, "" if seq_len is None else
                                                          ", sequence length %d" % seq_len))
        if sentence:
            warnings.append(sentence)
            # The figures go with the sentence: a live view marks this artefact's row now, not at the end.
            events.emit("log", level="warning", message=sentence, check=check, **where)

    ranks.barrier()  # the lead's check done: every process warms up, then measures, together
    phase.name = "warmup"
    events.emit("phase", name="warmup", state="start", **where)
    for _ in range(spec.warmup):
        run(*request)
    events.emit("phase", name="warmup", state="end", **where)
    ranks.barrier()

    phase.name = "measure"
    events.emit("phase", name="measure", state="start", **where)
    latencies: List[float] = []
    window: List[float] = []
    # --target-ci: stop once the throughput is known (after --min-iters requests, and at least the 100 a p99
    # needs); --duration is then the cap.
    rule = ThroughputStop(spec.target_ci, spec.min_iters)
    duration_done_at: Optional[int] = None  # requests measured when --duration had passed
    clock = time.perf_counter
    begin = window_start = clock()
    while True:
        t0 = clock()
        run(*request)
        t1 = clock()
        latencies.append(t1 - t0)
        window.append(t1 - t0)
        known = rule.add(t1 - t0)
        if t1 - window_start >= WINDOW_S:
            _window_event(events, batch_size, seq_len, window, rule.ci_pct())
            window, window_start = [], t1
        if duration_done_at is None and t1 - begin >= spec.duration:
            duration_done_at = len(latencies)
        if known or (len(latencies) >= spec.min_iters and duration_done_at is not None):
            break
    wall = clock() - begin
    if window:
        _window_event(events, batch_size, seq_len, window, rule.ci_pct())
    events.emit("phase", name="measure", state="end", **where)

    processes = ranks.gather({"latencies": latencies, "wall": wall, "core": os.environ.get("NEURON_RT_VISIBLE_CORES"),
                              "pid": os.getpid(), "compile": backend.compile_info()})
    if not ranks.lead:
        return
    if ranks.world > 1:
        # Percentiles over every process's requests; throughput over the common window (the slowest process's
        # wall), so the sum is never more than the cores did together.
        latencies = [x for p in processes for x in p["latencies"]]
        wall = max(p["wall"] for p in processes)

    if len(latencies) < P99_MIN_REQUESTS:
        warnings.append("p99 at batch %d comes from %d requests (fewer than %d): treat it as rough"
                        % (batch_size, len(latencies), P99_MIN_REQUESTS))
    throughput = len(latencies) * feed / wall
    where_text = "batch %d%s" % (batch_size, "" if seq_len is None else ", sequence length %d" % seq_len)
    capped_by = "min_iters" if duration_done_at is not None and duration_done_at < spec.min_iters else "duration"
    stopping, missed = rule.outcome(capped_by, spec.duration, where_text)
    if missed:
        warnings.append(missed)
    if flops.get("missing"):
        warnings.append("%s: FLOPs per sample not counted, so no MFU: %s" % (where_text, flops["missing"]))
    warnings.extend(w for w in backend.run_warnings() if w not in warnings)
    tokens = mut.tokens_per_sample
    summary = {
        "batch_size": batch_size,
        "seq_len": seq_len,
        "samples_per_request": feed,
        "compile_s": compile_s,
        "compile": backend.compile_info(),
        "iterations": len(latencies),
        "wall_s": wall,
        "latency_ms": latency_summary_ms(latencies),
        "throughput_per_s": throughput,
        "tokens_per_s": throughput * tokens if tokens else None,
        "p99_reliable": len(latencies) >= P99_MIN_REQUESTS,
        "check": check,
        "stopping": stopping,
        # The traced forward at batch_size, per sample: DataParallel's copies each run that same graph.
        "flops": flops,
        "model": mut.describe(example_batch),
        "backend": backend.describe(),
        "warnings": warnings,
        "data_parallel": None if ranks.world == 1 else {
            "processes": ranks.world, "via": "one process per logical NeuronCore (NEURON_RT_VISIBLE_CORES)",
            "per_process": [{"rank": i, "pid": p["pid"], "core": p["core"], "requests": len(p["latencies"]),
                             "throughput_per_s": len(p["latencies"]) * feed / p["wall"] if p["wall"] else None,
                             "compile_state": (p["compile"] or {}).get("state")}
                            for i, p in enumerate(processes)]},
    }
    with open(summary_path, "w") as handle:
        json.dump(summary, handle)
