"""Where a training step's inputs come from: ``--data host`` (the seed's loader) or ``--data device``.

``host``: random batches of the model's inputs made on the host (the seed's FakeDataset,
for any model) through a torch DataLoader with ``workers`` processes, copied to the
device every step.  That is the seed's experiment, and it measures the host's input
pipeline as well: on a fast accelerator it can be what bounds the loop.

``device``: one synthetic batch put on the device once and fed to every step, so the
figures measure the accelerator alone.

No torch import at module level: the agent loads this on hosts without torch.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterator, Tuple

from remote_agent.capacity import default_workers


class RandomBatches:
    """``steps`` batches of the model's synthetic inputs, each made whole on the host (as in the seed).

    The seed's FakeDataset made random images one at a time and let the DataLoader stack
    them; this makes each batch in one go (the same random numbers' worth of work, for any
    model's inputs: images, token ids, a user's own tensors) and hands it on as it is
    (``batch_size=None`` in the DataLoader).  torch's DataLoader accepts any object with
    ``__len__`` and ``__getitem__``, so the class does not inherit ``torch.utils.data.Dataset``.
    """

    def __init__(self, steps: int, batch_size: int, make_batch: Any, seed: int) -> None:
        self.steps = steps
        self.batch_size = batch_size
        self.make_batch = make_batch
        self.seed = seed

    def __len__(self) -> int:
        return self.steps

    def __getitem__(self, index: int) -> Any:
        batch = self.make_batch(self.batch_size, self.seed + index, True)
        return batch.inputs, batch.labels


def usable_cpus() -> int:
    """vCPUs this process may run on (its affinity mask, e.g. under taskset or a cgroup cpuset)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def loader_workers(spec: Any, on_cpu_device: bool, local_procs: int) -> Tuple[int, bool]:
    """(workers, chosen automatically): the spec's ``workers``, or the host's default when unset."""
    if spec.workers is not None:
        return spec.workers, False
    return default_workers(on_cpu_device, usable_cpus(), local_procs), True


def training_batches(spec: Any, backend: Any, mut: Any, device: Any, dtype: Any,
                     local_procs: int) -> Tuple[Iterator[Any], Dict[str, Any]]:
    """An iterator of ``spec.steps`` Batches on the host, and what feeds it.

    The iterator's ``next()`` is the step's data wait (the loader, for ``host``;
    nothing, for ``device``).  The step copies the batch to the device and casts
    it, which for ``device`` batches is a no-op: they are already there, in ``dtype``.
    """
    import torch

    from remote_agent.workloads.under_test import Batch

    if spec.data == "device":
        batch = mut.make_batch(spec.batch_size, spec.seed, True).to(device, dtype)
        backend.materialize()  # lazy devices: make the batch device data now, not a graph every step

        def reuse() -> Iterator[Any]:
            for _ in range(spec.steps):
                yield batch

        return reuse(), {"source": "device", "loader_workers": 0, "workers_auto": False}

    workers, auto = loader_workers(spec, backend.computes_on_cpu(), local_procs)
    dataset = RandomBatches(spec.steps, spec.batch_size, mut.make_batch, spec.seed)
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=workers)
    return (Batch(inputs, labels) for inputs, labels in loader), {
        "source": "host", "loader_workers": workers, "workers_auto": auto}


def describe_data(data: Dict[str, Any]) -> str:
    """``data host (FakeDataset, 2 loader workers, ...)`` or ``data device (...)``, for the run's log."""
    if data.get("source") == "device":
        return "data device (one synthetic batch on the device, reused every step)"
    workers = data.get("loader_workers")
    how = ", chosen for this host" if data.get("workers_auto") else ""
    return "data host (random batches through a DataLoader, %s loader worker%s%s)" % (
        workers, "" if workers == 1 else "s", how)
