"""How close a run came to its devices' peak: achieved TFLOP/s and MFU, per training run and per batch size.

The agent counts the FLOPs of one sample (``flops_per_sample``: forward + backward
for training, forward for inference, with torch.utils.flop_counter) and the dtype
the matmuls ran in (``matmul_dtype``).  Here they meet the sourced peak table:

    achieved_tflops = flops_per_sample x samples/s / 1e12
    mfu             = achieved_tflops / (dense peak per device x devices used)

Devices used: every training process has its own NeuronCore or GPU (``world_size`` =
--nproc x nodes); a Neuron inference request feeds one traced copy per NeuronCore
(``samples_per_request / batch_size`` of them) on the XLA stack, one process per NeuronCore
(``data_parallel.processes``) on the native stack; a GPU inference uses one GPU.
Where a figure is missing, ``mfu`` is None and ``mfu_basis["missing"]`` says why.
"""
from __future__ import annotations

from typing import Any

from app.core.peak_flops import TABLE_DATE, Peak, PeakTable, peak_for

NOT_COUNTED = "the run's FLOPs per sample were not counted (an agent older than FLOP counting, or the counter " \
              "could not run the model)"


def _dtype(part: dict[str, Any], result: dict[str, Any]) -> str:
    """The dtype the matmuls ran in: the agent's word, else what the spec implies (older agents)."""
    if part.get("matmul_dtype"):
        return str(part["matmul_dtype"])
    spec = result.get("spec") or {}
    precision = spec.get("precision") or "fp32"
    flags = " ".join(str(spec.get("neuron_cc_flags") or "").split())
    if precision == "fp32" and result.get("backend") == "neuron" and "--auto-cast none" not in flags \
            and "--auto-cast=none" not in flags:
        return "bf16"  # neuronx-cc casts fp32 matmuls to bf16 by default (--auto-cast matmult)
    return precision


def _devices(part: dict[str, Any], result: dict[str, Any], training: bool) -> int:
    spec = result.get("spec") or {}
    if training:
        return int(part.get("world_size") or (spec.get("nproc") or 1) * (spec.get("nnodes") or 1))
    if (part.get("data_parallel") or {}).get("processes"):
        return int(part["data_parallel"]["processes"])  # native Neuron: one process per logical NeuronCore
    if result.get("backend") == "neuron" and part.get("batch_size") and part.get("samples_per_request"):
        return max(1, int(part["samples_per_request"]) // int(part["batch_size"]))
    return 1


def monitor_tflops(result: dict[str, Any]) -> float | None:
    """neuron-monitor's own FLOP/s while measuring, summed over the NeuronCores (None where it had none)."""
    measure = (result.get("telemetry") or {}).get("measure") or {}
    values = [d["flops_mean"] for d in measure.get("devices") or [] if d.get("flops_mean") is not None]
    return sum(values) / 1e12 if values else None


def monitor_of(part: dict[str, Any]) -> float | None:
    """neuron-monitor's own TFLOP/s beside one part's MFU (``apply_mfu`` put it in the basis), else None."""
    return (part.get("mfu_basis") or {}).get("monitor_tflops")


def monitor_text(tflops: float) -> str:
    """``neuron-monitor 64.01 TFLOP/s``: the tool's own count, named as the tool's so it is not read as ours."""
    return f"neuron-monitor {tflops:.4g} TFLOP/s"


def mfu_of(part: dict[str, Any], result: dict[str, Any], table: PeakTable, training: bool,
           instance_type: str | None = None) -> tuple[float | None, dict[str, Any]]:
    """(mfu, basis) of one part of a Result: the train block or one inference row."""
    throughput = part.get("throughput_samples_per_s" if training else "throughput_per_s")
    per_sample = part.get("flops_per_sample")
    if not per_sample:
        return None, {"missing": NOT_COUNTED}
    if not throughput:
        return None, {"missing": "no throughput was measured"}
    achieved = per_sample * throughput / 1e12
    dtype = _dtype(part, result)
    peak, why = peak_for(table, result, dtype, instance_type)
    if peak is None:
        return None, {"missing": why, "achieved_tflops": achieved, "dtype": dtype}
    devices = _devices(part, result, training)
    return achieved / (peak.tflops * devices), _basis(peak, devices, achieved)


def _basis(peak: Peak, devices: int, achieved: float) -> dict[str, Any]:
    return {"device": peak.device, "devices": devices, "dtype": peak.dtype, "achieved_tflops": achieved,
            "peak_tflops_per_device": peak.tflops, "peak_tflops": peak.tflops * devices, "basis": peak.basis,
            "source": peak.source, "table_date": TABLE_DATE}


def apply_mfu(result: dict[str, Any], table: PeakTable) -> dict[str, Any]:
    """Fill ``mfu`` and ``mfu_basis`` in the train block and in each inference row (in place; returns it)."""
    instance_type = (result.get("cost") or {}).get("instance_type")
    train = result.get("train")
    if isinstance(train, dict):
        train["mfu"], train["mfu_basis"] = mfu_of(train, result, table, True, instance_type)
        if result.get("backend") == "neuron":
            train["mfu_basis"]["monitor_tflops"] = monitor_tflops(result)
    for point in result.get("generate") or []:
        apply_generate_mfu(point, result, table, instance_type)
    rows = result.get("infer") or []
    for row in rows:
        row["mfu"], row["mfu_basis"] = mfu_of(row, result, table, False, instance_type)
        if result.get("backend") == "neuron" and len(rows) == 1:
            # The monitor's figure covers every measure phase of the run: beside one batch size's only.
            row["mfu_basis"]["monitor_tflops"] = monitor_tflops(result)
    return result


def apply_generate_mfu(point: dict[str, Any], result: dict[str, Any], table: PeakTable,
                       instance_type: str | None) -> None:
    """MFU of a generate point's prefill (rows/s = prefill tok/s / S) and of its decode (tokens/s a row each
    step), each against the same peak; ``mfu_prefill_basis`` / ``mfu_decode_basis`` say how, or why not."""
    if not isinstance(point, dict) or point.get("error"):
        return
    s_in = point.get("input_len") or 0
    phases = {"prefill": (point.get("prefill_flops_per_row"),
                          point["prefill_tok_s"] / s_in if point.get("prefill_tok_s") and s_in else None),
              "decode": (point.get("decode_flops_per_token"), point.get("decode_tok_s"))}
    for name, (per_unit, rate) in phases.items():
        part = {"flops_per_sample": per_unit, "throughput_per_s": rate, "matmul_dtype": point.get("matmul_dtype"),
                "batch_size": point.get("batch_size")}
        mfu, basis = mfu_of(part, result, table, False, instance_type)
        if per_unit is None and point.get("flops_missing"):
            basis = {"missing": point["flops_missing"]}
        point[f"mfu_{name}"], point[f"mfu_{name}_basis"] = mfu, basis


def mfu_text(mfu: float | None) -> str:
    """``31%``, ``0.42%`` (small figures keep two significant digits), or ``N/A``."""
    if mfu is None:
        return "N/A"
    pct = 100.0 * mfu
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.2g}%"


def mfu_sentence(model: str, where: str, mfu: float | None, basis: dict[str, Any]) -> str:
    """``ViT-Base on trn1.2xlarge used 31% of the NeuronCores' bf16 peak (58.9 of 190 TFLOP/s)``."""
    if mfu is None:
        return f"{model} on {where}: MFU N/A ({basis.get('missing') or 'not computed'})"
    devices = int(basis.get("devices") or 1)
    device = str(basis.get("device") or "device").split(" (")[0]
    short = device.replace("NVIDIA ", "")
    whose = (f"{devices} {short}s'" if devices > 1 else f"the {short}'s") if "NeuronCore" not in device else \
        ("the NeuronCores'" if devices > 1 else "the NeuronCore's")
    return (f"{model} on {where} used {mfu_text(mfu)} of {whose} {basis.get('dtype')} peak "
            f"({basis['achieved_tflops']:.3g} of {basis['peak_tflops']:.4g} TFLOP/s)")


def live_mfu(compute: dict[str, Any], env: dict[str, Any] | None, samples_per_s: float | None,
             table: PeakTable) -> float | None:
    """MFU while a run goes: the setup event's FLOPs and dtype, the probe's device, the rolling throughput."""
    per_sample, dtype = compute.get("flops_per_sample"), compute.get("matmul_dtype")
    if not per_sample or not dtype or not samples_per_s:
        return None
    peak, _ = peak_for(table, {"env": env or {}, "backend": compute.get("backend")}, str(dtype))
    if peak is None:
        return None
    return per_sample * samples_per_s / 1e12 / (peak.tflops * int(compute.get("devices") or 1))
