"""How close each run came to its devices' peak, in one sentence per host and measure (MFU, app.core.mfu)."""
from __future__ import annotations

from typing import Any

from app.core.mfu import mfu_sentence, monitor_text
from app.core.target_ci import stop_text
from app.reports.wording import short_model


def mfu_sentences(rows: list[dict[str, Any]]) -> list[str]:
    """``vit_base_patch16_224 on trn1.2xlarge used 31% of the NeuronCores' bf16 peak (...)`` per host.

    Inference names its best batch size; rows without an MFU are gathered into one sentence with the reason.
    """
    best: dict[str, dict[str, Any]] = {}
    missing: dict[str, list[str]] = {}
    for row in rows:
        if row.get("mfu") is None:
            reason = row.get("mfu_missing") or "not computed"
            missing.setdefault(reason, [])
            if row["label"] not in missing[reason]:
                missing[reason].append(row["label"])
        elif row["label"] not in best or row["mfu"] > best[row["label"]]["mfu"]:
            best[row["label"]] = row
    sentences = []
    for label, row in best.items():
        where = label if row["workload"] == "train" else f"{label} at batch {row['batch_size']} (its best)"
        sentences.append(mfu_sentence(short_model(row["model"]), where, row["mfu"], row.get("mfu_basis") or {})
                         + _beside(row) + ".")
    for reason, labels in missing.items():
        if not any(label in best for label in labels):
            sentences.append(f"MFU N/A on {', '.join(labels)}: {reason}.")
    return sentences + monitor_sentences([r for r in rows if r["label"] not in best])


def _beside(row: dict[str, Any]) -> str:
    """``; neuron-monitor 64.01 TFLOP/s`` after our figure, where the run ran under neuron-monitor."""
    return f"; {monitor_text(row['monitor_tflops'])}" if row.get("monitor_tflops") is not None else ""


def monitor_sentences(rows: list[dict[str, Any]]) -> list[str]:
    """neuron-monitor's own count for runs with no MFU of ours (their FLOPs not counted, no peak): still a figure."""
    return [f"{row.get('ref') or row['run_id']} ({row['label']})"
            + ("" if row["workload"] == "train" else f" batch {row['batch_size']}")
            + f": {monitor_text(row['monitor_tflops'])} by its own count." for row in rows
            if row.get("monitor_tflops") is not None]


def stop_sentences(rows: list[dict[str, Any]]) -> list[str]:
    """``R1 (trn1.2xlarge) stopped ±2 % reached (±1.9 %)``: runs measured with --target-ci, one line a row."""
    out = []
    for row in rows:
        text = stop_text(row, row["workload"] == "train")
        if text:
            size = "" if row["workload"] == "train" else f" batch {row['batch_size']}"
            out.append(f"{row.get('ref') or row['run_id']} ({row['label']}){size} stopped {text}.")
    return out
