"""How each backend runs Hugging Face ``generate`` (the ``generate`` workload's side of a backend).

The scenario (workloads/generate.py) never asks which device it runs on: it asks the backend for a
``Generator`` and calls it.  A generator places the model, picks the KV cache the stack wants, and
knows how to wait for its device, so that a per-step stamp is taken after the step really finished:

- cpu: eager, the dynamic cache (nothing to wait for);
- cuda: eager with the dynamic cache, or with ``--compile`` the transformers recipe (static cache and
  ``torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)``); ``torch.cuda.synchronize``;
- xla: the static cache (fixed shapes: one graph for the prefill, one per decode step shape), the
  graphs compiled on the first call and counted by torch-xla's ``CompileTime``;
  ``torch_xla.sync()`` + ``wait_device_ops()``;
- neuron: optimum-neuron's ``NeuronModelForCausalLM`` (backends/optimum_neuron.py).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional


class Shape:
    """One sweep point: B rows of S prompt tokens, N new tokens each."""

    def __init__(self, batch: int, input_len: int, output_len: int) -> None:
        self.batch, self.input_len, self.output_len = batch, input_len, output_len

    @property
    def total_len(self) -> int:
        return self.input_len + self.output_len

    def text(self) -> str:
        return "batch %d, %d in / %d out" % (self.batch, self.input_len, self.output_len)


def step_hook_class() -> Any:
    """A ``StoppingCriteria`` that stamps the time once per decoding step and never stops anything.

    Stopping criteria run once per step on Hugging Face, optimum-neuron and NxD Inference alike (logits
    processors do not run under Neuron's on-device sampling), after the step's token was chosen.
    """
    from transformers import StoppingCriteria

    class StepStamp(StoppingCriteria):
        def __init__(self, sync: Callable[[], None], clock: Callable[[], float]) -> None:
            self.sync, self.clock = sync, clock
            self.stamps: List[float] = []

        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            import torch

            self.sync()  # the token exists on the host's clock only once the device has made it
            self.stamps.append(self.clock())
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)

    return StepStamp


def fixed_length(model: Any, pad_token_id: int) -> None:
    """EOS off for good: no row may end before its N tokens (the only setting Neuron also honours)."""
    config = getattr(model, "generation_config", None)
    if config is not None:
        config.eos_token_id = None
        config.pad_token_id = pad_token_id
        config.forced_eos_token_id = None


class Generator:
    """The eager generator (cpu, and cuda without --compile): the model on ``device``, the dynamic cache."""

    stack = "transformers generate, eager, dynamic cache"
    cache = "dynamic"

    def __init__(self, model: Any, device: Any, shape: Shape, pad_token_id: int,
                 sync: Optional[Callable[[], None]] = None) -> None:
        self.model, self.device, self.shape = model, device, shape
        self.pad_token_id = pad_token_id
        self._sync = sync
        self.compile_note: Optional[str] = None  # why compile seconds are not known, where they are not

    # ----------------------------------------------------------------- lifecycle
    def load(self) -> None:
        """Place the model where it runs (timed by the scenario as the load)."""
        self.model = self.model.to(self.device).eval()
        fixed_length(self.model, self.pad_token_id)

    def sync(self) -> None:
        if self._sync is not None:
            self._sync()

    def compile_seconds(self) -> Optional[float]:
        """Seconds the stack spent compiling so far (None where it cannot tell: ``compile_note`` says why)."""
        return 0.0

    def describe(self) -> Dict[str, Any]:
        return {"stack": self.stack, "cache": self.cache}

    # ------------------------------------------------------------------ calls
    def generate_kwargs(self) -> Dict[str, Any]:
        n = self.shape.output_len
        return {"max_new_tokens": n, "min_new_tokens": n, "do_sample": False, "num_beams": 1,
                "eos_token_id": None, "pad_token_id": self.pad_token_id, "use_cache": True}

    def generate(self, ids: Any, mask: Any, stopping: List[Any], logits: bool = False) -> Any:
        """One call: the output ids on the host (B x (S + new)); with ``logits``, (ids, first step's logits)."""
        import torch
        from transformers import StoppingCriteriaList

        kwargs = self.generate_kwargs()
        if logits:
            kwargs.update(return_dict_in_generate=True, output_logits=True)
        with torch.no_grad():
            out = self.model.generate(input_ids=ids.to(self.device), attention_mask=mask.to(self.device),
                                      stopping_criteria=StoppingCriteriaList(stopping), **kwargs)
        self.sync()
        if logits:
            first = out.logits[0] if getattr(out, "logits", None) else None
            return out.sequences.cpu(), None if first is None else first.float().cpu()
        return out.cpu()


class CudaGenerator(Generator):
    """cuda: eager (dynamic cache), or ``--compile``: static cache + ``torch.compile`` of the forward."""

    def __init__(self, model: Any, device: Any, shape: Shape, pad_token_id: int, compiled: bool) -> None:
        import torch

        super().__init__(model, device, shape, pad_token_id, sync=torch.cuda.synchronize)
        self.compiled = compiled
        if compiled:
            self.stack = "transformers generate, static cache, torch.compile(reduce-overhead)"
            self.cache = "static"
            self.compile_note = ("torch.compile compiles inside the first call: its time is the first call's, "
                                 "reported apart")

    def load(self) -> None:
        import torch

        super().load()
        if self.compiled:
            self.model.generation_config.cache_implementation = "static"
            self.model.forward = torch.compile(self.model.forward, mode="reduce-overhead", fullgraph=True)

    def compile_seconds(self) -> Optional[float]:
        return None if self.compiled else 0.0


class XlaGenerator(Generator):
    """xla (any PJRT device): the static cache, so every step has a fixed shape and compiles once."""

    stack = "transformers generate on torch-xla, static cache"
    cache = "static"

    def __init__(self, model: Any, device: Any, shape: Shape, pad_token_id: int) -> None:
        super().__init__(model, device, shape, pad_token_id, sync=_xla_wait)

    def load(self) -> None:
        super().load()
        self.model.generation_config.cache_implementation = "static"

    def compile_seconds(self) -> Optional[float]:
        import torch_xla.debug.metrics as met

        data = met.metric_data("CompileTime")
        return float(data[1]) / 1e9 if data else 0.0


def _xla_wait() -> None:
    import torch_xla
    import torch_xla.core.xla_model as xm

    torch_xla.sync()
    xm.wait_device_ops()


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


class NativeNeuronGenerator(Generator):
    """native TorchNeuron (SDK 2.33, Trn2/Trn3): the static cache, so every decode step has one shape, and in
    ``--neuron-mode compile`` the forward compiled by ``torch.compile(backend="neuron", fullgraph=True)`` (the
    transformers recipe with Neuron's backend; dynamic shapes are refused there); ``eager`` runs per-op
    compiles on first use, which the warm-up at the exact shape absorbs.  Device syncs close every step."""

    cache = "static"

    def __init__(self, backend: Any, model: Any, device: Any, shape: Shape, pad_token_id: int) -> None:
        super().__init__(model, device, shape, pad_token_id, sync=backend.synchronize)
        self.backend = backend
        self.compiled = backend.spec.neuron_mode == "compile"
        self.stack = "TorchNeuron (native), transformers generate, static cache, " + (
            "torch.compile(backend=neuron)" if self.compiled else "eager")
        self.compile_note = ("the neuron backend compiles inside the first call (its time is the first call's, "
                             "reported apart); the compile block says cold or warm from the host's NEFF cache")

    def load(self) -> None:
        import torch

        super().load()
        self.model.generation_config.cache_implementation = "static"
        self.backend._start_compile_watch()
        if self.compiled:
            self.model.forward = torch.compile(self.model.forward, backend="neuron", fullgraph=True, dynamic=False)

    def compile_seconds(self) -> Optional[float]:
        return None  # inside the first call: the backend's compile block (describe) has its own figure

    def describe(self) -> Dict[str, Any]:
        block = self.backend._compile_block(None)
        return dict(super().describe(), compile=block, fallback_ops=block.get("fallback_ops") or [],
                    warnings=self.backend.run_warnings())
