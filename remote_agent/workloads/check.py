"""Does the compiled model compute what the eager model computes?  (DESIGN.md §10, "Numerical check")

A compiler that returns a fast wrong answer is worse than a slow right one.  Every
compiled artefact is run on fresh inputs (other seeds than the trace example) and
compared with the eager model on the host's CPU in fp32, on the same inputs:

    max_abs_err   the largest |compiled - eager| over every output element
    max_rel_err   max_abs_err / the largest |eager| of that output (error relative to the
                  output's scale: element-wise ratios explode where the reference is ~0)
    finite        no NaN or infinity in the compiled outputs
    tolerance     the largest max_rel_err that agrees, by the precision the matmuls ran in
    agrees        finite and max_rel_err <= tolerance

Tolerances: fp32 1e-3 (TorchScript and XLA on CPU differ from eager by 0 to ~2e-7; 1e-3
leaves room for reordered sums on accelerators); bf16 0.1 (bfloat16 keeps 8 significant
bits and the errors of a deep network add up: measured on this project's CPU, eager bf16
against eager fp32 with random weights, batch 2: BERT-large's classification logits 4.8 %
of their scale, its hidden states 2.2 %, GPT-2's 1.6 %, ViT-Base's logits 1.3 %,
ResNet-50's 0.6 %).  A wrong compile (a traced branch the inputs do not take, NaNs) is
off by the output's whole scale or more.
neuronx-cc casts fp32 matmuls to bf16 by default (--auto-cast matmult), so a Neuron
artefact compiled from an fp32 model is held to the bf16 tolerance unless the compiler
flags say --auto-cast none.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, List, Optional, Sequence

TOLERANCE = {"fp32": 1e-3, "bf16": 0.1}
CHECK_INPUTS = 3
CHECK_SEED = 1000  # fresh inputs: seeds far from the run's own (0) and the trace example's


def compute_precision(precision: str, backend_name: str, neuron_cc_flags: str) -> str:
    """The precision the matmuls of a compiled artefact run in (what the tolerance is for)."""
    if precision == "fp32" and backend_name == "neuron":
        flags = " ".join(neuron_cc_flags.split())
        if "--auto-cast none" not in flags and "--auto-cast=none" not in flags:
            return "bf16"
    return precision


def compare(got: Sequence[Any], want: Sequence[Any]) -> Dict[str, Any]:
    """Errors of one output set against the reference (flat tuples of tensors)."""
    import torch

    if len(got) != len(want):
        return {"max_abs_err": None, "max_rel_err": None, "finite": True,
                "mismatch": "the compiled model returned %d outputs, the eager one %d" % (len(got), len(want))}
    worst_abs, worst_rel, finite, ref_finite = 0.0, 0.0, True, True
    for index, (g, w) in enumerate(zip(got, want)):
        g = g.detach().to("cpu", torch.float32)
        w = w.detach().to("cpu", torch.float32)
        if g.shape != w.shape:
            return {"max_abs_err": None, "max_rel_err": None, "finite": bool(torch.isfinite(g).all()),
                    "mismatch": "output %d has shape %s, the eager one %s" % (index, list(g.shape), list(w.shape))}
        finite = finite and bool(torch.isfinite(g).all())
        ref_finite = ref_finite and bool(torch.isfinite(w).all())
        if g.numel() == 0:
            continue
        diff = (g - w).abs()
        diff = torch.where(torch.isfinite(diff), diff, torch.full_like(diff, float("inf")))
        abs_err = float(diff.max())
        scale = float(w.abs().max()) if ref_finite else float("nan")
        rel_err = abs_err / scale if scale > 0 else (0.0 if abs_err == 0 else float("inf"))
        worst_abs, worst_rel = max(worst_abs, abs_err), max(worst_rel, rel_err)
    return {"max_abs_err": worst_abs, "max_rel_err": worst_rel, "finite": finite, "reference_finite": ref_finite}


def summarize(parts: List[Dict[str, Any]], precision: str, what: str) -> Dict[str, Any]:
    """One ``check`` block from the comparisons of several inputs."""
    tolerance = TOLERANCE[precision]
    mismatch = next((p["mismatch"] for p in parts if p.get("mismatch")), None)
    finite = all(p.get("finite", True) for p in parts)
    ref_finite = all(p.get("reference_finite", True) for p in parts)
    abs_errs = [p["max_abs_err"] for p in parts if p.get("max_abs_err") is not None]
    rel_errs = [p["max_rel_err"] for p in parts if p.get("max_rel_err") is not None]
    max_abs = max(abs_errs) if abs_errs else None
    max_rel = max(rel_errs) if rel_errs else None
    agrees: Optional[bool] = (mismatch is None and finite and max_rel is not None and math.isfinite(max_rel)
                              and max_rel <= tolerance)
    block: Dict[str, Any] = {
        "what": what, "inputs": len(parts), "precision": precision,
        "max_abs_err": _json_number(max_abs), "max_rel_err": _json_number(max_rel), "finite": finite,
        "tolerance": tolerance, "agrees": agrees,
    }
    if not ref_finite:
        # The eager model itself overflows on these inputs: there is nothing trustworthy to compare with.
        block["agrees"] = None
        block["note"] = "the eager fp32 model itself gives NaN or infinity on these inputs"
    if mismatch:
        block["note"] = mismatch
    return block


def _json_number(value: Optional[float]) -> Optional[float]:
    """JSON has no infinity: an unbounded error is reported as null with finite false beside it."""
    return value if value is None or math.isfinite(value) else None


def warning(block: Dict[str, Any], where: str) -> Optional[str]:
    """The sentence a disagreement or a NaN adds to the Result's warnings (None when it agrees)."""
    if block.get("agrees") is not False:
        return None
    if block.get("note") and block.get("max_rel_err") is None and block.get("finite"):
        return "%s: the compiled model does not match the eager model: %s" % (where, block["note"])
    if not block.get("finite"):
        return ("%s: the compiled model returned NaN or infinity where the eager model on CPU (fp32) returned "
                "finite numbers; its figures are kept but its answers are wrong" % where)
    return ("%s: the compiled model disagrees with the eager model on CPU (fp32): largest error %.3g of the output's "
            "scale (%.3g absolute), over the %s tolerance %.0e; its figures are kept, check its answers before "
            "trusting them" % (where, block["max_rel_err"], block["max_abs_err"], block["precision"],
                                block["tolerance"]))


def check_compiled(run: Callable[..., Any], reference: Any, make_inputs: Callable[[int], Sequence[Any]],
                   cast: Callable[[Sequence[Any]], Sequence[Any]], precision: str, what: str) -> Dict[str, Any]:
    """Run ``run`` (the compiled artefact) and ``reference`` (eager, CPU, fp32) on CHECK_INPUTS fresh inputs.

    ``make_inputs(seed)`` gives host tensors in fp32; ``cast`` turns them into what the artefact
    takes (bf16 floats for a bf16 model).
    """
    import torch

    from remote_agent.workloads.under_test import flatten_outputs

    parts = []
    for k in range(CHECK_INPUTS):
        inputs = make_inputs(CHECK_SEED + 17 * k)
        with torch.no_grad():
            want = flatten_outputs(reference(*inputs))
            got = flatten_outputs(run(*cast(inputs)))
        parts.append(compare(got, want))
    return summarize(parts, precision, what)


def check_loss(loss_value: float, reference_loss: float, precision: str) -> Dict[str, Any]:
    """The first training step's loss against the eager model's on CPU in fp32 (same weights, same batch)."""
    finite = math.isfinite(loss_value)
    abs_err = abs(loss_value - reference_loss) if finite else None
    scale = abs(reference_loss)
    rel = (abs_err / scale if scale > 0 else 0.0) if abs_err is not None else None
    part = {"max_abs_err": abs_err, "max_rel_err": rel, "finite": finite,
            "reference_finite": math.isfinite(reference_loss)}
    block = summarize([part], precision, "first training step's loss")
    block["loss"] = loss_value if finite else None
    block["reference_loss"] = reference_loss if math.isfinite(reference_loss) else None
    return block
