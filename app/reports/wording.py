"""How figures and measure names read in every report section (HTML, PDF)."""
from __future__ import annotations

from typing import Any

from app.core.numbers import NA, figure
from app.reports import svg


def num(value: float | None, fmt: str | None = None) -> str:
    """``fmt`` when given, else four significant digits without e-notation (13,470, not 1.347e+04)."""
    if value is None or fmt is None:
        return figure(value)
    return format(value, fmt)


def times(value: float | None) -> str:
    return NA if value is None else f"{value:.2f}×"


def measures(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((g["workload"], g["model"]) for g in doc["groups"]))


def short_model(model: str) -> str:
    return model.split("(")[0].split(" ")[0]


def measure_title(workload: str, model: str) -> str:
    words = {"train": "training", "infer": "inference", "generate": "generation", "serve": "serving"}
    return f"{model} {words.get(workload, workload)}"


def join_values(values: list[Any]) -> str:
    return "/".join(f"{v:g}" if isinstance(v, float) else str(v) for v in values) or NA


def colours_of(doc: dict[str, Any]) -> dict[str, str]:
    """One colour per host label, the same in every chart of the report."""
    labels = dict.fromkeys(g["label"] for g in doc["groups"])
    return {label: svg.colour(i) for i, label in enumerate(labels)}


def shape_cell(row: dict[str, Any]) -> str:
    """What a row measured, in a few characters: ``8``, ``4 × 128``, ``2 · 16/8`` (generate: batch · prompt/new
    tokens), ``16/8 at c=4`` (serve: prompt/new tokens at its operating load); never "None"."""
    if row.get("workload") == "serve":
        load = row.get("load_name") or "no level met the SLO"
        return f"{row.get('input_len')}/{row.get('output_len')} at {load}"
    text = NA if row.get("batch_size") is None else str(row["batch_size"])
    if row.get("output_len") is not None:
        return f"{text} · {row.get('input_len')}/{row.get('output_len')}"
    return text + (f" × {row['seq_len']}" if row.get("seq_len") is not None else "")
