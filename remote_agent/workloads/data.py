"""Where a training step's inputs come from: ``--data host`` (the seed's loader) or ``--data device``.

``host``: the seed's FakeDataset (random images made on the host) through a torch
DataLoader with ``workers`` processes, copied to the device every step.  That is
the seed's experiment, and it measures the host's input pipeline as well: on a
fast accelerator it can be what bounds the loop.

``device``: one synthetic batch made on the device once and fed to every step, so
the figures measure the accelerator alone.

No torch import at module level: the agent loads this on hosts without torch.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterator, Tuple

from remote_agent.capacity import default_workers


class FakeDataset:
    """``length`` random 3xHxW images, label ``index % num_classes`` (as in the seed).

    torch's DataLoader accepts any object with ``__len__`` and ``__getitem__``, so the
    class does not inherit ``torch.utils.data.Dataset``.
    """

    def __init__(self, length: int, image_shape: Tuple[int, int, int], num_classes: int) -> None:
        self.length = length
        self.image_shape = tuple(image_shape)
        self.num_classes = num_classes

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        import torch

        image = torch.randn(self.image_shape, dtype=torch.float32)
        label = torch.tensor(index % self.num_classes, dtype=torch.int64)
        return image, label


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


def training_batches(spec: Any, backend: Any, device: Any, dtype: Any, shape: Tuple[int, int, int],
                     num_classes: int, local_procs: int) -> Tuple[Iterator[Tuple[Any, Any]], Dict[str, Any]]:
    """An iterator of ``spec.steps`` (images, labels) batches, and what feeds it.

    The iterator's ``next()`` is the step's data wait (the loader, for ``host``;
    nothing, for ``device``).  The step copies the batch to the device and casts
    it, which for ``device`` batches is a no-op: they are made there, in ``dtype``.
    """
    import torch

    if spec.data == "device":
        torch.manual_seed(spec.seed)
        images = torch.randn((spec.batch_size,) + tuple(shape), dtype=dtype, device=device)
        labels = torch.randint(0, num_classes, (spec.batch_size,), device=device)
        backend.materialize()  # lazy devices: make the batch device data now, not a graph every step

        def reuse() -> Iterator[Tuple[Any, Any]]:
            for _ in range(spec.steps):
                yield images, labels

        return reuse(), {"source": "device", "loader_workers": 0, "workers_auto": False}

    workers, auto = loader_workers(spec, backend.computes_on_cpu(), local_procs)
    dataset = FakeDataset(spec.steps * spec.batch_size, shape, num_classes)
    loader = torch.utils.data.DataLoader(dataset, batch_size=spec.batch_size, num_workers=workers, drop_last=True)
    return iter(loader), {"source": "host", "loader_workers": workers, "workers_auto": auto}


def describe_data(data: Dict[str, Any]) -> str:
    """``data host (FakeDataset, 2 loader workers, ...)`` or ``data device (...)``, for the run's log."""
    if data.get("source") == "device":
        return "data device (one synthetic batch on the device, reused every step)"
    workers = data.get("loader_workers")
    how = ", chosen for this host" if data.get("workers_auto") else ""
    return "data host (FakeDataset, %s loader worker%s%s)" % (workers, "" if workers == 1 else "s", how)
