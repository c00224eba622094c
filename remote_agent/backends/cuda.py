"""The cuda backend: eager training with DDP over NCCL, torch.compile for inference."""
from __future__ import annotations

import os
import shutil
from typing import Any, Callable, Dict, Tuple

from remote_agent.backends.base import Backend, BackendUnavailable


class CudaBackend(Backend):
    name = "cuda"
    dist_backend = "nccl"

    def check(self) -> None:
        import torch

        if not torch.cuda.is_available():
            smi = shutil.which("nvidia-smi")
            raise BackendUnavailable(
                "backend cuda is not available: torch %s (CUDA build %s) sees no GPU; nvidia-smi %s"
                % (torch.__version__, torch.version.cuda or "none",
                   "is at %s" % smi if smi else "is not on PATH (no NVIDIA driver?)"))

    def describe(self) -> Dict[str, Any]:
        import torch

        info = super().describe()
        info["device"] = torch.cuda.get_device_name(0)
        info["cuda"] = torch.version.cuda
        return info

    def device(self, local_rank: int) -> Any:
        import torch

        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)

    def wrap_for_training(self, model: Any, local_rank: int, world_size: int) -> Any:
        if world_size <= 1:
            return model
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model, device_ids=[local_rank])

    def compile_for_inference(self, model: Any, example: Tuple[Any, ...], workdir: str,
                              tag: str) -> Callable[..., Any]:
        import torch

        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        device = self.device(local_rank)
        model = model.to(device)
        compiled = torch.compile(model)

        def run(*inputs: Any) -> Any:
            with torch.no_grad():
                outs = compiled(*(x.to(device, non_blocking=True) for x in inputs))
                return tuple(out.cpu() for out in outs)  # the copies wait for the GPU: latency is end to end

        # torch.compile is lazy: the first call compiles, so it belongs to the compile phase.
        run(*example)
        return run

    def generator(self, model: Any, shape: Any, pad_token_id: int, workdir: str, name: str) -> Any:
        from remote_agent.backends.generation import CudaGenerator

        return CudaGenerator(model, self.device(int(os.environ.get("LOCAL_RANK", "0"))), shape, pad_token_id,
                             bool(getattr(self.spec, "compile", False)))
