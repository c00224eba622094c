"""The xla backend: torch-xla lazy tensors on any PJRT device (CPU here, NeuronCores via neuron).

This is the seed's training path: tensors are traced lazily, a graph is compiled
the first time its shape is seen, and ``torch_xla.sync()`` cuts and runs it.
"""
from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any, Callable, Dict, Optional, Tuple

from remote_agent.backends.base import Backend, BackendUnavailable


class XlaBackend(Backend):
    name = "xla"
    dist_backend = "xla"

    def check(self) -> None:
        if importlib.util.find_spec("torch_xla") is None:
            raise BackendUnavailable(
                "backend %s needs torch-xla, which is not installed for %s (pip install torch-xla==2.9.0)"
                % (self.name, sys.executable))

    def setup_env(self) -> None:
        # Without PJRT_DEVICE torch-xla guesses (TPU first); "xla" here means the CPU
        # PJRT device unless the user chose another one explicitly.
        os.environ.setdefault("PJRT_DEVICE", "CPU")

    def describe(self) -> Dict[str, Any]:
        import torch_xla

        info = super().describe()
        info["torch_xla"] = torch_xla.__version__
        info["pjrt_device"] = os.environ.get("PJRT_DEVICE")
        info["device"] = str(self.device(0))
        return info

    def device(self, local_rank: int) -> Any:
        import torch_xla

        return torch_xla.device()

    def computes_on_cpu(self) -> bool:
        return os.environ.get("PJRT_DEVICE") == "CPU"

    def materialize(self) -> None:
        import torch_xla

        torch_xla.sync()

    def init_process_group(self) -> None:
        import torch.distributed as dist
        import torch_xla.distributed.xla_backend  # noqa: F401  (registers the "xla" group)

        dist.init_process_group("xla", init_method="xla://")

    def wrap_for_training(self, model: Any, local_rank: int, world_size: int) -> Any:
        # As in the seed: gradients are all-reduced by xm.optimizer_step, not DDP.
        return model

    def optimizer_step(self, optimizer: Any) -> None:
        import torch_xla.core.xla_model as xm

        xm.optimizer_step(optimizer)

    def finish_step(self, loss: Any) -> float:
        import torch_xla

        torch_xla.sync()  # cut the lazy graph: compile (first time) and run it
        return float(loss.item())  # wait for the device: the step time is honest

    def compile_stats(self) -> Optional[Dict[str, float]]:
        import torch_xla.debug.metrics as met

        data = met.metric_data("CompileTime")
        if not data:
            return {"count": 0, "seconds": 0.0}
        return {"count": int(data[0]), "seconds": float(data[1]) / 1e9}

    def compile_for_inference(self, model: Any, example: Tuple[Any, ...], workdir: str,
                              tag: str) -> Callable[..., Any]:
        import torch
        import torch_xla

        device = self.device(0)
        model = model.to(device)

        def run(*inputs: Any) -> Any:
            with torch.no_grad():
                outs = model(*(x.to(device) for x in inputs))
                torch_xla.sync()
                return tuple(out.cpu() for out in outs)

        run(*example)  # the seed's lazy-tensor mode: the first call compiles the graph
        return run

    def generator(self, model: Any, shape: Any, pad_token_id: int, workdir: str, name: str) -> Any:
        from remote_agent.backends.generation import XlaGenerator

        return XlaGenerator(model, self.device(0), shape, pad_token_id)
