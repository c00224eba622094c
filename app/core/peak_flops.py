"""The dense peak of the device a run used: the MFU denominator (resources/peaks/, sourced and dated).

Pure model, no file access: ``app.services.peaks`` reads the shipped CSV and hands
its text here.  The device comes from the run's probe:

* a GPU by the name nvidia-smi gives it, matched word by word (Lightning's
  matcher read "NVIDIA L40S" as an L4; see the research note), H100 as SXM when
  its memory is HBM3 (the PCIe part has HBM2e);
* a NeuronCore by the instance type's family (trn1, inf2, trn2, ...), and on
  Trn2/Trn3 the logical-core size (LNC, from neuron-ls; 2 is the default);
  without an instance type, two cores a device can only be a NeuronCore-v2
  (Trainium and Inferentia2 have the same peak);
* a CPU has no peak: no figure, with a reason, never a guess.

The basis is the vendor's chip figure divided by its cores (the research note's
recommendation); the TensorEngine-only figures stay in the table, unused.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Any

TABLE_DATE = "2026-08-21"  # the newest source of the table: the AWS Neuron docs at that date
TABLE_NAME = "resources/peaks/peak-flops.csv"
NO_CPU_PEAK = "no known peak for a CPU"
_COLUMNS = ("accelerator", "instance_family", "unit", "dtype", "dense_tflops", "source")
# EC2 family -> the accelerator's name in the table.
_NEURON_FAMILIES = {"trn1": "Trainium", "trn1n": "Trainium", "inf2": "Inferentia2", "trn2": "Trainium2",
                    "trn2u": "Trainium2", "trn3": "Trainium3", "inf1": "Inferentia"}
# GPUs from before Ampere have no bf16 (or tf32) tensor cores: PyTorch runs bf16 matmuls there without them,
# so no peak in the table stands for what ran (the table's T4 and V100 rows say "no bf16"; their fp16 peak
# is for fp16 tensor cores, a different dtype).  Said as a fact of the chip, not as a gap in the table.
_BEFORE_AMPERE = {"NVIDIA T4": "Turing", "NVIDIA V100 SXM2": "Volta"}
_AMPERE_DTYPES = ("bf16", "tf32")
_CORE_NAMES = {"Trainium": "NeuronCore-v2", "Inferentia2": "NeuronCore-v2", "Trainium2": "NeuronCore-v3",
               "Trainium3": "NeuronCore-v4", "Inferentia": "NeuronCore-v1"}


class PeakTableError(ValueError):
    """The peak table is malformed (the message names the line)."""


@dataclass(frozen=True)
class Peak:
    """One device's dense peak for one dtype, with where the figure comes from."""

    device: str          # "NVIDIA H100 SXM", "NeuronCore-v2 (Trainium)"
    dtype: str
    tflops: float        # per device
    source: str
    basis: str           # "per GPU", "per NeuronCore (chip / 2 cores)", ...


class PeakTable:
    def __init__(self, rows: list[dict[str, str]]) -> None:
        self.rows = rows

    def find(self, accelerator: str, unit: str, dtype: str) -> dict[str, str] | None:
        return next((r for r in self.rows if r["accelerator"] == accelerator and r["unit"] == unit
                     and r["dtype"] == dtype), None)


def parse_peak_csv(text: str) -> PeakTable:
    reader = csv.DictReader(io.StringIO(text))
    if tuple(reader.fieldnames or ()) != _COLUMNS:
        raise PeakTableError(f"{TABLE_NAME}: the header is {reader.fieldnames}, expected {list(_COLUMNS)}")
    rows = []
    for number, row in enumerate(reader, start=2):
        try:
            float(row["dense_tflops"])
        except (TypeError, ValueError):
            raise PeakTableError(f"{TABLE_NAME} line {number}: dense_tflops {row['dense_tflops']!r} is not a "
                                 "number") from None
        rows.append(row)
    return PeakTable(rows)


def gpu_model(name: str) -> str | None:
    """The table's name for an nvidia-smi GPU name, or None when the table has no such GPU."""
    words = set(re.split(r"[\s\-_/]+", name.upper()))
    if "H100" in words:
        if "PCIE" in words:
            return "NVIDIA H100 PCIe"
        return "NVIDIA H100 SXM" if words & {"SXM", "SXM5", "HBM3"} else None  # NVL and others: not in the table
    if "H200" in words:
        return "NVIDIA H200"
    if "A100" in words and "SXM4" in words:
        return "NVIDIA A100 80GB SXM" if "80GB" in words else "NVIDIA A100 40GB SXM"
    for model in ("A10G", "L40S", "L4", "T4"):  # whole words: "L4" never matches "L40S"
        if model in words:
            return f"NVIDIA {model}"
    if "V100" in words and "SXM2" in words:
        return "NVIDIA V100 SXM2"
    return None


def _family(instance_type: str | None) -> str | None:
    return instance_type.split(".")[0].lower() if instance_type and "." in instance_type else None


def neuron_accelerator(env: dict[str, Any], instance_type: str | None) -> tuple[str | None, str, str]:
    """(accelerator, unit, why-not) for a Neuron host: the table's row names, or None and the reason."""
    devices = [d for d in env.get("devices") or [] if d.get("kind") == "neuron"]
    family = _family(instance_type or env.get("instance_type"))
    accelerator = _NEURON_FAMILIES.get(family or "")
    if accelerator is None:
        cores = {d.get("cores") for d in devices}
        if family is None and cores == {2}:
            return "NeuronCore-v2", "core", ""  # two cores a device: trn1 and inf2 share its peak
        what = f"instance type {instance_type or env.get('instance_type')}" if family else "an unknown instance type"
        return None, "", f"no NeuronCore peak known for {what} (neuron-ls shows {sorted(c for c in cores if c)} " \
                         "cores a device)"
    unit = "core"
    if accelerator in ("Trainium2", "Trainium3"):
        lnc = next((d.get("lnc") for d in devices if d.get("lnc")), None) or 2  # LNC=2 is the default
        unit = "lnc2_core" if lnc == 2 else "core"
    return accelerator, unit, ""


def peak_for(table: PeakTable, result: dict[str, Any], dtype: str, instance_type: str | None = None) -> \
        tuple[Peak | None, str]:
    """The dense peak of one device of ``result``'s run for ``dtype``, or None and the reason."""
    env = result.get("env") or {}
    backend = result.get("backend")
    detail = result.get("backend_detail") or {}
    if backend == "cuda":
        names = [d.get("name") for d in env.get("devices") or [] if d.get("kind") == "gpu" and d.get("name")]
        name = names[0] if names else detail.get("device")
        if not name:
            return None, "the probe named no GPU"
        model = gpu_model(str(name))
        if model is None:
            return None, f"no dense peak in the table for the GPU {name}"
        row = table.find(model, "gpu", dtype)
        if row is None and model in _BEFORE_AMPERE and dtype in _AMPERE_DTYPES:
            return None, (f"the {model.replace('NVIDIA ', '')} has no {dtype} tensor cores ({_BEFORE_AMPERE[model]}, "
                          f"before Ampere): its {dtype} matmuls run without them, so no peak stands for them")
        if row is None:
            return None, f"{model} has no dense {dtype} figure in the table"
        return Peak(model, dtype, float(row["dense_tflops"]), row["source"], "per GPU"), ""
    if backend == "neuron":
        accelerator, unit, why = neuron_accelerator(env, instance_type)
        if accelerator is None:
            return None, why
        known = accelerator != "NeuronCore-v2"
        row = table.find(accelerator if known else "Trainium", unit, dtype)
        if row is None:
            return None, f"{_CORE_NAMES.get(accelerator, accelerator)} has no dense {dtype} figure in the table"
        if not known:
            return Peak("NeuronCore-v2 (trn1 or inf2: the instance type is unknown)", dtype,
                        float(row["dense_tflops"]), row["source"], "per NeuronCore (chip / cores)"), ""
        basis = "per logical NeuronCore (LNC=2, chip / 4)" if unit == "lnc2_core" else "per NeuronCore (chip / cores)"
        return Peak(f"{_CORE_NAMES[accelerator]} ({accelerator})", dtype, float(row["dense_tflops"]), row["source"],
                    basis), ""
    if backend == "cpu" or (backend == "xla" and detail.get("pjrt_device") in (None, "CPU")):
        return None, NO_CPU_PEAK
    return None, f"no known peak for the {backend} backend's device {detail.get('device') or ''}".rstrip()
