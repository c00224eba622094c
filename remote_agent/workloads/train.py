"""The training workload: the seed experiment (timm ViT, random images, Adam, torchrun).

One process per NeuronCore/GPU under torchrun, or one process.  Rank 0 reports a
``step`` event per step with the *global* batch; every step's time runs from the
end of the previous step to the moment the loss is on the host, so the sum of
step times in a window is that window's wall time (data-loader waits included,
and reported apart as ``data_s``).
"""
from __future__ import annotations

import json
import os
import socket
import time
from typing import Any, Dict

from remote_agent.eventlog import WorkerEvents
from remote_agent.workloads.data import describe_data, training_batches
from remote_agent.workloads.models import create_model, input_shape


class Phase:
    """Tracks the current phase so a failure can name it."""

    def __init__(self) -> None:
        self.name = "setup"


def run_train(spec: Any, backend: Any, events: WorkerEvents, summary_path: str, phase: Phase) -> None:
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
    model = create_model(spec)
    channels, height, width = input_shape(model, spec)
    num_classes = int(getattr(model, "num_classes", 1000) or 1000)
    device = backend.device(local_rank)
    dtype = torch.bfloat16 if spec.precision == "bf16" else torch.float32
    model = model.to(device=device, dtype=dtype)
    model = backend.wrap_for_training(model, local_rank, world)
    model.train()
    optimizer = torch.optim.Adam(model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    local_procs = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
    batches, data = training_batches(spec, backend, device, dtype, (channels, height, width), num_classes,
                                     local_procs)
    global_batch = spec.batch_size * world
    if lead:
        events.emit("log", level="info", message="%s %s, %d parameters, input %dx%dx%d, batch %d x %d process(es), "
                    "%s" % (backend.name, spec.model, sum(p.numel() for p in model.parameters()),
                            channels, height, width, spec.batch_size, world, describe_data(data)))
        events.emit("phase", name="setup", state="end")
        events.emit("phase", name="warmup" if spec.warmup else "measure", state="start")

    compile_before = backend.compile_stats()
    compiled_count = compile_before["count"] if compile_before else 0
    phase.name = "warmup" if spec.warmup else "measure"
    step_end = time.perf_counter()
    for i, (images, labels) in enumerate(batches, start=1):
        fetched = time.perf_counter()
        t_start = time.time() - (fetched - step_end)
        images = images.to(device=device, dtype=dtype)
        labels = labels.to(device)
        optimizer.zero_grad()
        loss = loss_fn(model(images), labels)
        loss.backward()
        backend.optimizer_step(optimizer)
        loss_value = backend.finish_step(loss)
        now = time.perf_counter()
        dt, data_s, step_end = now - step_end, fetched - step_end, now

        stats = backend.compile_stats()
        compiled = bool(stats and stats["count"] > compiled_count)
        if stats:
            compiled_count = stats["count"]
        if lead:
            if compiled:
                # The compile happened inside this step: show it on the run's timeline.
                events.emit("phase", t=t_start, name="compile", state="start")
                events.emit("phase", name="compile", state="end")
            events.emit("step", i=i, dt_s=dt, samples=global_batch, compiled=compiled, loss=loss_value,
                        data_s=data_s)
            if i == spec.warmup:
                events.emit("phase", name="warmup", state="end")
                events.emit("phase", name="measure", state="start")
        if i == spec.warmup:
            phase.name = "measure"
        if i >= spec.steps:
            break

    phase.name = "teardown"
    if lead:
        events.emit("phase", name="measure", state="end")
        compile_after = backend.compile_stats()
        summary: Dict[str, Any] = {
            "world_size": world,
            "batch_size": spec.batch_size,
            "global_batch": global_batch,
            "input_shape": [channels, height, width],
            "num_classes": num_classes,
            "param_dtype": str(next(model.parameters()).dtype).replace("torch.", ""),
            "data": data,
            "backend": backend.describe(),
            "compile_seconds": (compile_after["seconds"] - compile_before["seconds"])
            if compile_after and compile_before else 0.0,
            "compile_count": (compile_after["count"] - compile_before["count"])
            if compile_after and compile_before else 0,
        }
        with open(summary_path, "w") as handle:
            json.dump(summary, handle)
