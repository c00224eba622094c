"""How a run's model and its numerical check read, in the terminal, the reports and the app alike."""
from __future__ import annotations

from typing import Any


def check_mark_of(agrees: bool | None, finite: bool | None, checked: bool = True) -> str:
    """``ok``, ``WRONG`` (disagrees), ``NaN`` (not finite), ``?`` (not judged) or ``-`` (not checked)."""
    if not checked:
        return "-"
    if finite is False:
        return "NaN"
    if agrees is None:
        return "?"
    return "ok" if agrees else "WRONG"


def check_mark(check: dict[str, Any] | None) -> str:
    """The mark of a Result's ``check`` block (see check_mark_of)."""
    if not check:
        return "-"
    return check_mark_of(check.get("agrees"), check.get("finite"))


def format_check(check: dict[str, Any], brief: bool = False) -> str:
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
    return (f"{what} against eager on CPU (fp32): {verdict}, {error}{extra} "
            f"(tolerance {check.get('tolerance'):.0e}, {check.get('precision')})")


def format_model(model: dict[str, Any]) -> str:
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
