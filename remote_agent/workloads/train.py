"""The training workload: the seed experiment (random data, Adam, torchrun) for any model under test.

One process per NeuronCore/GPU under torchrun, or one process.  Rank 0 reports a
``step`` event per step with the *global* batch; every step's time runs from the
end of the previous step to the moment the loss is on the host, so the sum of
step times in a window is that window's wall time (data-loader waits included,
and reported apart as ``data_s``).  The model, its inputs and its loss come from
``sources.load_model``: this loop knows nothing of images or tokens.
"""
from __future__ import annotations

import copy
import itertools
import json
import os
import socket
import time
from typing import Any, Dict, Optional

from remote_agent.eventlog import WorkerEvents
from remote_agent.protocol import TARGET_CI_MIN_STEPS
from remote_agent.stopping import TrainingStop
from remote_agent.workloads import check as numerics
from remote_agent.workloads.data import describe_data, training_batches
from remote_agent.workloads.flops import count_flops, live_fields, matmul_dtype
from remote_agent.workloads.sources import load_model
from remote_agent.workloads.stop_signal import StopAgreement


class Phase:
    """Tracks the current phase so a failure can name it."""

    def __init__(self) -> None:
        self.name = "setup"


def _reference_loss(reference: Any, mut: Any, batch: Any) -> float:
    """The eager model's loss on the host's CPU in fp32: what the first step's loss is checked against."""
    import torch

    cpu = batch.to("cpu", torch.float32)
    with torch.no_grad():  # the step's forward (in training mode, dropout and all), without its backward
        return float(mut.loss(mut.training_forward(reference, cpu), cpu))


def _describe_inputs(batch: Any) -> str:
    return ", ".join("%s %s %s" % (d["name"], "x".join(str(n) for n in d["shape"]), d["dtype"])
                     for d in batch.describe())


def run_train(spec: Any, backend: Any, events: WorkerEvents, summary_path: str, phase: Phase,
              workdir: str = ".") -> None:
    import torch

    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    lead = rank == 0

    if lead:
        events.emit("phase", name="setup", state="start")
    if world > 1:
        backend.init_process_group()
        # Every rank says so: when a multi-node rendezvous fails, the app names the nodes that never joined.
        events.emit("log", level="info", message="rank %d of %d joined on %s" % (rank, world, socket.gethostname()),
                    joined=rank)
    mut = load_model(spec, spec.batch_size, spec.seq_len, workdir)
    mut.module.train()
    # The device first: autograd sizes its per-device queues at the first backward, and the FLOP count's
    # backward (on the meta device) must not run before torch-xla's device exists (XLA's backward then fails).
    device = backend.device(local_rank)
    # FLOPs of one step's forward + backward, counted while the module is still on the host (rank 0 only).
    flops = count_flops(mut, spec.batch_size, spec.seed, True, matmul_dtype(
        spec.precision, backend.name, spec.neuron_cc_flags)) if lead else None
    # --target-ci: rank 0 decides (it times the steps); every rank leaves the loop at its step.
    stop_rule = TrainingStop(spec.target_ci, spec.warmup) if lead else None
    agree = StopAgreement(world, bool(spec.target_ci))
    # The check's reference: the same initial weights, eager, on the host's CPU in fp32 (rank 0 only).
    reference = copy.deepcopy(mut.module) if spec.check and lead else None
    dtype = torch.bfloat16 if spec.precision == "bf16" else torch.float32
    model = mut.module.to(device=device, dtype=dtype)
    model = backend.wrap_for_training(model, local_rank, world)
    model.train()
    optimizer = torch.optim.Adam(model.parameters())
    local_procs = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    batches, data = training_batches(spec, backend, mut, device, dtype, local_procs)
    first = next(batches)
    batches = itertools.chain([first], batches)
    reference_loss: Optional[float] = None
    if reference is not None:
        reference_loss = _reference_loss(reference, mut, first)
        del reference
    global_batch = spec.batch_size * world
    tokens_per_sample = mut.tokens_per_sample
    model_block = mut.describe(first)
    if lead:
        for note in mut.notes:
            events.emit("log", level="info", message=note)
        events.emit("log", level="info", message="%s %s: %s, %d parameters, inputs %s, batch %d x %d process(es), "
                    "%s" % (backend.name, spec.model, model_block.get("class"), model_block.get("parameters", 0),
                            _describe_inputs(first), spec.batch_size, world, describe_data(data)))
        # What the live view needs for MFU as the steps come: the FLOPs of a sample and the matmuls' dtype.
        events.emit("phase", name="setup", state="end", backend=backend.name, devices=world, **live_fields(flops))
        events.emit("phase", name="warmup" if spec.warmup else "measure", state="start")

    compile_before = backend.compile_stats()
    compiled_count = compile_before["count"] if compile_before else 0
    phase.name = "warmup" if spec.warmup else "measure"
    loss_check: Optional[Dict[str, Any]] = None
    step_end = time.perf_counter()
    for i, batch in enumerate(batches, start=1):
        fetched = time.perf_counter()
        t_start = time.time() - (fetched - step_end)
        batch = batch.to(device, dtype)
        optimizer.zero_grad()
        with backend.autocast():
            loss = mut.loss(mut.training_forward(model, batch), batch)
        loss.backward()
        backend.optimizer_step(optimizer)
        loss_value = backend.finish_step(loss)
        now = time.perf_counter()
        dt, data_s, step_end = now - step_end, fetched - step_end, now

        stats = backend.compile_stats()
        compiled = bool(stats and stats["count"] > compiled_count)
        if stats:
            compiled_count = stats["count"]
        if i == 1 and reference_loss is not None:
            loss_check = numerics.check_loss(loss_value, reference_loss, numerics.compute_precision(
                spec.precision, backend.name, spec.neuron_cc_flags))
            if _has_dropout(mut.module):
                loss_check["note"] = ("dropout draws different masks on the device and on the CPU: the two "
                                      "losses agree only roughly")
                loss_check["tolerance"] = max(loss_check["tolerance"], numerics.TOLERANCE["bf16"])
                loss_check["agrees"] = bool(loss_check["finite"] and loss_check["max_rel_err"] is not None
                                            and loss_check["max_rel_err"] <= loss_check["tolerance"])
            sentence = numerics.warning(loss_check, "training step 1")
            if sentence:
                # Said now, with the figures, so a live view marks it at step 1 rather than at the end.
                events.emit("log", level="warning", message=sentence, check=loss_check)
        stop = stop_rule.add(i, dt, compiled) if stop_rule is not None else False
        if lead:
            if compiled:
                # The compile happened inside this step: show it on the run's timeline.
                events.emit("phase", t=t_start, name="compile", state="start")
                events.emit("phase", name="compile", state="end")
            extra = {"tokens": global_batch * tokens_per_sample} if tokens_per_sample else {}
            if stop_rule is not None and stop_rule.ci_pct is not None:
                extra["ci_pct"] = stop_rule.ci_pct  # the median's interval so far: the live view draws it shrink
            events.emit("step", i=i, dt_s=dt, samples=global_batch, compiled=compiled, loss=loss_value,
                        data_s=data_s, **extra)
            if i == spec.warmup:
                events.emit("phase", name="warmup", state="end")
                events.emit("phase", name="measure", state="start")
        if i == spec.warmup:
            phase.name = "measure"
        if i >= spec.steps:
            break
        if spec.target_ci and i >= spec.warmup + TARGET_CI_MIN_STEPS and agree(stop):
            if world > 1 and local_rank == 0:
                # One line a node (not a rank): its log then shows every node leaving at rank 0's step.
                events.emit("log", level="info", message="rank %d of %d left at step %d: rank 0 knows the figure "
                            "(--target-ci)" % (rank, world, i))
            break

    phase.name = "teardown"
    if lead:
        events.emit("phase", name="measure", state="end")
        compile_after = backend.compile_stats()
        warnings = []
        assert stop_rule is not None
        stopping, missed = stop_rule.outcome(spec.steps)
        if missed:
            warnings.append(missed)
        if flops and flops.get("missing"):
            warnings.append("FLOPs per sample not counted, so no MFU: %s" % flops["missing"])
        if loss_check is not None:
            sentence = numerics.warning(loss_check, "training step 1")
            if sentence:
                warnings.append(sentence)
        for sentence in backend.run_warnings():  # ops that fell back to the host CPU
            events.emit("log", level="warning", message=sentence)
            warnings.append(sentence)
        summary: Dict[str, Any] = {
            "world_size": world,
            "batch_size": spec.batch_size,
            "global_batch": global_batch,
            "model": model_block,
            "tokens_per_sample": tokens_per_sample,
            "param_dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
            "data": data,
            "backend": backend.describe(),
            "check": loss_check,
            "stopping": stopping,
            "flops": flops,
            "warnings": warnings,
            "compile_seconds": (compile_after["seconds"] - compile_before["seconds"])
            if compile_after and compile_before else 0.0,
            "compile_count": (compile_after["count"] - compile_before["count"])
            if compile_after and compile_before else 0,
            "compile": backend.compile_info(),
        }
        with open(summary_path, "w") as handle:
            json.dump(summary, handle)


def _has_dropout(module: Any) -> bool:
    import torch

    return any(isinstance(m, torch.nn.modules.dropout._DropoutNd) and m.p > 0 for m in module.modules())
