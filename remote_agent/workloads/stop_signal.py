"""Every rank of a training run stops at the same step: rank 0's ``--target-ci`` decision, shared.

Rank 0 alone times the steps, so it alone can tell that the figure is known; the
other ranks (on this node and on every other node of a ``--nodes`` or Slurm run)
must leave the loop at the very same step, or the next gradient all-reduce would
wait for ranks that are gone.  Rank 0 broadcasts one byte each step from the floor
on, through a **gloo** process group made beside the run's own:

* it works whatever the run's group is: gloo (cpu), NCCL (cuda) and torch-xla's
  ``xla`` group (xla, neuron), whose ``xla://`` rendezvous is a TCPStore that
  ``new_group`` reuses; a tensor on an XLA device would instead add a collective to
  the lazy graph and a device round trip every step;
* it spans nodes as torchrun's rendezvous does, and needs no shared file system (a
  file that the other ranks poll would, and could be read a step late);
* it is one small TCP message a step, on the host, after the step's loss is on the
  host: the device's queue is never involved.
"""
from __future__ import annotations

from typing import Any


class StopAgreement:
    """Call with rank 0's decision on every rank, at the same steps; returns rank 0's decision everywhere."""

    def __init__(self, world_size: int, needed: bool) -> None:
        self.group: Any = None
        if world_size > 1 and needed:
            import torch.distributed as dist

            self.group = dist.new_group(backend="gloo")  # collective: every rank makes it, in the same order

    def __call__(self, stop: bool) -> bool:
        if self.group is None:
            return stop
        import torch
        import torch.distributed as dist

        flag = torch.tensor([1 if stop else 0], dtype=torch.uint8)
        dist.broadcast(flag, src=0, group=self.group)
        return bool(flag.item())
