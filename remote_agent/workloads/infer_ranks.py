"""The processes of one data-parallel inference: one per logical NeuronCore (the native Neuron stack).

torchrun starts them (``--nproc N``), each pinned to its own core by the backend.  They keep in step
through a gloo group on the host's CPU (no device collective is needed): the lead compiles first, so the
others load its NEFFs from the host's cache instead of compiling the same graph N times at once, all
measure from one barrier, and the lead gathers every process's request times to merge them.  One
process (``WORLD_SIZE`` unset or 1) needs none of this and starts no group.
"""
from __future__ import annotations

import os
from typing import Any, List


class InferRanks:
    def __init__(self) -> None:
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.lead = self.rank == 0
        self._joined = False

    def _join(self) -> Any:
        import torch.distributed as dist

        if not self._joined:
            if not dist.is_initialized():
                dist.init_process_group("gloo", init_method="env://")
            self._joined = True
        return dist

    def barrier(self) -> None:
        """Every process waits here until all have come (nothing with one process)."""
        if self.world > 1:
            import torch

            # One CPU tensor through the gloo group: dist.barrier() would first ask torch which accelerator the
            # host has (a device lookup this host-side wait has no use for).
            self._join().all_reduce(torch.zeros(1))

    def gather(self, value: Any) -> List[Any]:
        """Every process's ``value``, in rank order, on every process (``[value]`` with one process)."""
        if self.world == 1:
            return [value]
        out: List[Any] = [None] * self.world
        self._join().all_gather_object(out, value)
        return out

    def close(self) -> None:
        if self._joined:
            import torch.distributed as dist

            dist.destroy_process_group()
