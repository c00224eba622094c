"""FLOPs per sample of the model under test, counted once at setup by PyTorch's own counter.

``torch.utils.flop_counter.FlopCounterMode`` counts the matrix work (matmuls,
convolutions, attention) of the aten ops a call runs, from their shapes: the
convention MFU uses, where elementwise ops are not counted.  It is run on the real
inputs' shapes: forward + backward of one training batch (the loss included), or
forward of one inference request.

Where: on the **meta device** first.  Meta tensors have shapes and no data, so a
call costs no arithmetic and no memory: ViT-Base's forward + backward at batch 16
is ~1.7 TFLOP, about 20 s on a 2-vCPU host's CPU, and ~1 s of Python on meta.  The
module's own parameters are not touched: ``torch.func.functional_call`` swaps in
meta stand-ins.  Meta also counts attention: on the CPU, ``scaled_dot_product_attention``
runs a fused kernel the counter does not know (ViT-Base's forward read 33.7 GFLOP
there against 35.1 on meta), while meta takes the math path, whose bmm ops it counts.
A model whose forward needs real values (``.item()``, a branch on the data; Hugging
Face's BERT checks whether its attention mask is all ones) fails on meta; it is then
counted on the host's CPU at **batch 1** (every counted op is linear in the batch, and
one sample keeps a large model's count to seconds: BERT-large at 128 tokens is ~0.26
TFLOP forward + backward), with the math attention kernel; a user's file whose inputs
fit only its own batch, at that batch.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

COUNTER = "torch.utils.flop_counter"


def matmul_dtype(precision: str, backend_name: str, neuron_cc_flags: str) -> str:
    """The dtype the matmuls ran in, which picks the peak MFU divides by.

    bf16 when the model was cast; on Neuron, fp32 models' matmuls run in bf16 too unless the
    compiler flags say ``--auto-cast none`` (check.compute_precision); on CUDA, fp32 matmuls
    run as TF32 only where PyTorch was told so (``float32_matmul_precision`` other than its
    default "highest"; the agent never changes it).
    """
    from remote_agent.workloads.check import compute_precision

    dtype = compute_precision(precision, backend_name, neuron_cc_flags)
    if dtype == "fp32" and backend_name == "cuda":
        import torch

        if torch.get_float32_matmul_precision() != "highest":
            return "tf32"
    return dtype


def count_flops(mut: Any, batch_size: int, seed: int, training: bool, matmul: str) -> Dict[str, Any]:
    """``{"flops_per_sample", "counted_on", "counter", "matmul_dtype"}``; flops None with ``missing`` saying why.

    Args:
        mut: the ModelUnderTest, its module on the host (before it moves to the device).
        batch_size: the batch the run feeds (per process, or per request for inference).
        seed: the batch's seed (shapes are what matter; the values only on the CPU fallback).
        training: forward + backward + the loss; else the inference forward under no_grad.
        matmul: what ``matmul_dtype`` says (carried along for the app's peak).
    """
    import torch

    block: Dict[str, Any] = {"flops_per_sample": None, "counted_on": None, "counter": COUNTER,
                             "matmul_dtype": matmul}
    with torch.random.fork_rng(devices=[]):  # the run's own random draws stay as they were
        failures = []
        # A user's file may make inputs for its own batch only: then the CPU counts that batch.
        attempts = [("meta", batch_size), ("cpu", 1)] + ([("cpu", batch_size)] if batch_size != 1 else [])
        for where, size in attempts:
            try:
                total = _count(mut, mut.make_batch(size, seed, training), where, training)
            except Exception as exc:  # any error of the model's code: try the next way, then say why
                failures.append("%s at batch %d: %s: %s" % (where, size, type(exc).__name__,
                                                          str(exc).splitlines()[0][:200] if str(exc) else ""))
                continue
            if total <= 0:
                failures.append("%s at batch %d: the counter saw no matmul or convolution" % (where, size))
                continue
            block["flops_per_sample"] = float(total) / size
            block["counted_on"] = "%s, batch %d" % ("meta device" if where == "meta" else "host CPU", size)
            return block
    block["missing"] = "the FLOP counter could not run the model (%s)" % "; ".join(failures)
    return block


def _count(mut: Any, batch: Any, where: str, training: bool) -> int:
    import torch
    from torch.func import functional_call
    from torch.utils.flop_counter import FlopCounterMode

    module = mut.module
    if where == "meta":
        state = {name: torch.empty_like(p, device="meta").requires_grad_(p.requires_grad)
                 for name, p in module.named_parameters()}
        state.update({name: torch.empty_like(b, device="meta") for name, b in module.named_buffers()})
        batch = batch.to("meta", torch.float32)
    else:
        # The real weights, as new leaves (their gradients go nowhere) and buffers copied (BatchNorm's
        # running statistics of the run stay untouched).
        state = {name: p.detach().requires_grad_(p.requires_grad) for name, p in module.named_parameters()}
        state.update({name: b.clone() for name, b in module.named_buffers()})

    def call(*args: Any, **kwargs: Any) -> Any:
        return functional_call(module, state, args, dict(mut.call_kwargs, **kwargs) if not training else kwargs)

    counter = FlopCounterMode(display=False)
    with counter, _math_attention(where):
        if training:
            loss = mut.loss(mut.training_forward(call, batch), batch)
            loss.backward()
        else:
            with torch.no_grad():
                call(*batch.tensors()) if mut.positional else call(**batch.inputs)
    return int(counter.get_total_flops())


def _math_attention(where: str) -> Any:
    """On the CPU, the attention kernel whose matmuls the counter sees (meta takes it by itself)."""
    import contextlib

    if where == "meta":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.MATH)



def live_fields(flops: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """The setup phase's end event carries these: the live view computes MFU from them as steps come."""
    flops = flops or {}
    return {"flops_per_sample": flops.get("flops_per_sample"), "matmul_dtype": flops.get("matmul_dtype")}
