"""Words for a model under test and its numerical check, shared by the CLI's summary and the desktop app.

``model_label`` is what a table of runs shows (``hf bert-large-uncased (classification)``,
``file two_tower.py``); ``format_model`` the Result's model block in full; ``check_mark`` and
``format_check`` the verdict of the check of a compiled model against the eager one (DESIGN.md §10);
``check_problem`` the one sentence a disagreement gets where the user looks.
"""
from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any

from remote_agent.model_ref import DEFAULT_FUNCTION, ModelRefError, parse_model_ref


def model_label(model: str, task: str = "", model_file: Mapping[str, Any] | None = None) -> str:
    """``timm vit_tiny_patch16_224``, ``torchvision resnet50``, ``hf bert-large-uncased (classification)``,
    ``hf tiny-bert (local config)``, ``file two_tower.py``, ``file net.py:make``.

    A local path shows its last part: the full path is on the row's tooltip (``model_tooltip``).
    """
    try:
        ref = parse_model_ref(model)
    except ModelRefError:
        return model or ""
    notes = []
    if ref.source == "file":
        name = (model_file or {}).get("name") or posixpath.basename(ref.name.replace("\\", "/"))
        if ref.function and ref.function != DEFAULT_FUNCTION:
            name += ":" + ref.function
    elif ref.source == "hf" and not ref.is_hub_id:
        path = ref.name.replace("\\", "/").rstrip("/")
        if path.endswith("/config.json"):
            path = posixpath.dirname(path)
        name = posixpath.basename(path) or ref.name
        notes.append("local config")
    else:
        name = ref.name
    if task:
        notes.append(task)
    return f"{ref.source} {name}" + (f" ({', '.join(notes)})" if notes else "")


def model_tooltip(model: str, model_file: Mapping[str, Any] | None = None) -> str:
    """The reference as given, and which file travelled with it (name and sha256 prefix)."""
    text = model
    if model_file and model_file.get("sha256"):
        text += f"\n{model_file.get('name')}, sha256 {str(model_file['sha256'])[:12]}"
    return text


def check_mark_of(agrees: bool | None, finite: bool | None, checked: bool = True) -> str:
    """``ok``, ``WRONG`` (disagrees), ``NaN`` (not finite), ``?`` (not judged) or ``-`` (not checked)."""
    if not checked:
        return "-"
    if finite is False:
        return "NaN"
    if agrees is None:
        return "?"
    return "ok" if agrees else "WRONG"


def check_mark(check: Mapping[str, Any] | None) -> str:
    """The mark of a Result's ``check`` block (see check_mark_of)."""
    if not check:
        return "-"
    return check_mark_of(check.get("agrees"), check.get("finite"))


def format_check(check: Mapping[str, Any], brief: bool = False) -> str:
    """``agrees: largest error 2e-07 of the output's scale (tolerance 1e-03, fp32)``."""
    if check.get("agrees") is None:
        verdict = f"not judged: {check.get('note', 'nothing to compare with')}"
    elif not check.get("finite", True):
        verdict = "NaN or infinity in the compiled model's outputs"
    else:
        verdict = "agrees" if check.get("agrees") else "DISAGREES"
    rel = check.get("max_rel_err")
    error = f"largest error {rel:.2g} of the output's scale" if rel is not None else "error unbounded"
    if brief:
        return f"{verdict} ({error})"
    what = check.get("what") or "compiled model"
    extra = ""
    if check.get("loss") is not None and check.get("reference_loss") is not None:
        extra = f", loss {check['loss']:.6g} vs {check['reference_loss']:.6g}"
    tolerance = check.get("tolerance")
    return (f"{what} against eager on CPU (fp32): {verdict}, {error}{extra} "
            f"(tolerance {'N/A' if tolerance is None else format(tolerance, '.0e')}, {check.get('precision')})")


def where_text(batch_size: int | None, seq_len: int | None = None) -> str:
    """``batch 4`` or ``batch 4, seq 128``: one compiled artefact of a sweep."""
    text = f"batch {batch_size}" if batch_size is not None else "training"
    return text + (f", seq {seq_len}" if seq_len is not None else "")


def percent_of_scale(rel: float) -> str:
    """0.0123 -> ``1.23 %``, 3.0 -> ``300 %``, 176 -> ``17,600 %``."""
    pct = rel * 100.0
    return f"{pct:,.0f} %" if pct >= 100 else f"{pct:.3g} %"


def check_problem(check: Mapping[str, Any] | None, where: str) -> str | None:
    """One sentence when a check says the compiled model gives wrong answers, else None.

    ``batch 4: compiled model disagrees with eager (error 300 % of scale)``.
    """
    if not check or check.get("agrees") is not False:
        return None
    what = "loss" if check.get("reference_loss") is not None else "compiled model"
    if check.get("mismatch"):
        return f"{where}: {what} does not match eager ({check['mismatch']})"
    if not check.get("finite", True):
        return f"{where}: {what} gives NaN or infinity where eager gives numbers"
    rel = check.get("max_rel_err")
    error = f"error {percent_of_scale(rel)} of scale" if rel is not None else "error unbounded"
    return f"{where}: {what} disagrees with eager ({error})"


def format_model(model: Mapping[str, Any]) -> str:
    """``BertForSequenceClassification (hf bert-large-uncased, classification), 335,143,938 parameters, ...``."""
    parts = [model.get("source") or "?", model.get("name") or "?"]
    if model.get("task"):
        parts.append(model["task"])
    text = f"{model.get('class') or '?'} ({' '.join(parts[:2])}{', ' + parts[2] if len(parts) > 2 else ''})"
    if isinstance(model.get("parameters"), int):
        text += f", {model['parameters']:,} parameters"
    inputs = model.get("inputs") or []
    if inputs:
        text += "; inputs " + ", ".join(f"{i.get('name')} {'x'.join(str(n) for n in i.get('shape') or [])} "
                                        f"{i.get('dtype')}" for i in inputs)
    digest = model.get("sha256") or (model.get("config") or {}).get("sha256")
    if digest:
        text += f"; sha256 {digest[:12]}"
    libraries = model.get("libraries") or {}
    if libraries:
        text += "; " + ", ".join(f"{k} {v}" for k, v in sorted(libraries.items()))
    return text
