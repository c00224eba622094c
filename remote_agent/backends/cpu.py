"""The cpu backend: eager training, TorchScript-traced and frozen inference."""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

from remote_agent.backends.base import Backend


class CpuBackend(Backend):
    name = "cpu"
    dist_backend = "gloo"

    def describe(self) -> Dict[str, Any]:
        info = super().describe()
        info["device"] = "cpu"
        return info

    def computes_on_cpu(self) -> bool:
        return True

    def compile_for_inference(self, model: Any, example: Tuple[Any, ...], workdir: str,
                              tag: str) -> Callable[..., Any]:
        import torch

        with torch.no_grad():
            traced = torch.jit.trace(model, example, check_trace=False)
            frozen = torch.jit.freeze(traced.eval())

        def run(*inputs: Any) -> Any:
            with torch.no_grad():
                return frozen(*inputs)

        return run
