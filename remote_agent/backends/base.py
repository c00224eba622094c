"""The interface every backend implements, with the eager (cpu/cuda) behaviour as default."""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, List, Optional, Tuple


class BackendUnavailable(Exception):
    """The backend cannot run here; the message says what is missing and where we looked."""


class Backend:
    """One way of running the workloads.  Subclasses override what differs."""

    name = "base"
    dist_backend = "gloo"  # torch.distributed process group for torchrun workers

    def __init__(self, spec: Any) -> None:
        self.spec = spec

    # ----------------------------------------------------------------- lifecycle
    def check(self) -> None:
        """Raise BackendUnavailable if this backend cannot run here."""

    def setup_env(self) -> None:
        """Set environment variables that must exist before the device library loads.

        Eager backends (cpu, cuda): where torch-xla is installed too (a Neuron XLA venv, a TPU image),
        transformers and accelerate import it at their own import unless USE_TORCH_XLA is off: some
        5 CPU-seconds and torch-xla's runtime in a process that never uses it.  Both read that variable.
        """
        os.environ.setdefault("USE_TORCH_XLA", "0")

    def describe(self) -> Dict[str, Any]:
        """What actually ran: device name, library versions (goes into the result)."""
        import torch

        return {"name": self.name, "torch": torch.__version__, "threads": torch.get_num_threads()}

    def device(self, local_rank: int) -> Any:
        import torch

        return torch.device("cpu")

    def init_process_group(self) -> None:
        import torch.distributed as dist

        dist.init_process_group(self.dist_backend)

    def wrap_for_training(self, model: Any, local_rank: int, world_size: int) -> Any:
        """Data parallelism across torchrun workers (DDP for eager backends)."""
        if world_size <= 1:
            return model
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(model)

    def computes_on_cpu(self) -> bool:
        """True when the model runs on the host's CPUs (loader workers then compete with it for cores)."""
        return False

    # ------------------------------------------------------------------ training
    def materialize(self) -> None:
        """Finish creating tensors made on the device so far (lazy devices record them as a graph)."""

    def optimizer_step(self, optimizer: Any) -> None:
        optimizer.step()

    def finish_step(self, loss: Any) -> float:
        """Wait for the device to finish the step and return the loss value.

        ``loss.item()`` copies the value to the host, which on every backend
        means the step's work has completed: the step time is honest.
        """
        return float(loss.item())

    def compile_stats(self) -> Optional[Dict[str, float]]:
        """Cumulative compile count and seconds, or None where nothing compiles."""
        return None

    def autocast(self) -> Any:
        """The context a forward runs in (the native neuron stack's bf16 autocast); nothing by default."""
        import contextlib

        return contextlib.nullcontext()

    def run_warnings(self) -> List[str]:
        """Sentences the Result must carry (ops that fell back to the host CPU); none by default."""
        return []

    def compile_info(self) -> Optional[Dict[str, Any]]:
        """How the last compile went, for the Result's compile block: ``state`` (cold, loaded, warm), ``how``,
        and what the backend knows (artefact, cache key, where the seconds came from); None: nothing to say."""
        return None

    # ----------------------------------------------------------------- inference
    def compile_for_inference(self, model: Any, example: Tuple[Any, ...], workdir: str,
                              tag: str) -> Callable[..., Any]:
        """Return a callable that runs one request and returns its outputs on the host.

        ``model`` takes the input tensors positionally and returns a tuple of tensors
        (``under_test.traceable``); ``example`` is the trace example, one tensor per input;
        ``tag`` names the artefact's static shape (``bs4-seq128``).  The callable takes the
        request's tensors positionally.  The caller times this method as the compile phase.
        """
        raise NotImplementedError

    def inference_batch(self, batch_size: int) -> int:
        """The batch actually fed per request (DataParallel feeds one per core)."""
        return batch_size

    # ---------------------------------------------------------------- generation
    def generator(self, model: Any, shape: Any, pad_token_id: int, workdir: str, name: str) -> Any:
        """How this backend runs ``generate`` at one shape (backends/generation.py): eager, dynamic cache.

        ``shape`` is a generation.Shape; ``name`` the model's name (compiled artefacts are cached by it).
        """
        from remote_agent.backends.generation import Generator

        return Generator(model, self.device(0), shape, pad_token_id)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")
