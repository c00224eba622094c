"""How ``--target-ci`` is worded, the same in the CLI, the app's views and the reports."""
from __future__ import annotations

from typing import Any


def pct_text(pct: float | None) -> str:
    """``±1.9 %`` (two significant digits under 10), or ``N/A``."""
    if pct is None:
        return "N/A"
    return f"±{pct:.2g} %" if pct < 10 else f"±{pct:.0f} %"


def interval_text(ci_pct: float | None, target: float | None, lead: str = "") -> str:
    """The live figure: ``±3.1 % (target ±2 %)`` while it shrinks, empty before the interval is known."""
    if ci_pct is None:
        return ""
    return f"{lead}{pct_text(ci_pct)}" + (f" (target {pct_text(target)})" if target else "")


def stop_text(part: dict[str, Any], training: bool) -> str | None:
    """Why a training run or one batch size stopped, for a run with a target; None for a fixed-length one.

    ``±2 % reached (±1.9 %)`` or ``at --steps 500, ±2 % not reached (±3.4 %)``.
    """
    target = part.get("target_ci_pct")
    if not target:
        return None
    reached = pct_text(part.get("ci_pct"))
    if part.get("stopped_by") == "target_ci":
        return f"{pct_text(target)} reached ({reached})"
    cap = {"steps": "--steps", "duration": "--duration", "min_iters": "--min-iters"}.get(
        str(part.get("stopped_by")), "the cap")
    return f"at {cap}, {pct_text(target)} not reached ({reached})"


def spec_target(spec: dict[str, Any]) -> str | None:
    """``until ±2 %, at most 500 steps`` for a spec with a target (the spec summary's words)."""
    target = spec.get("target_ci")
    if not target:
        return None
    if spec.get("workload") == "train":
        return f"until {pct_text(target)}, at most {spec.get('steps')} steps"
    return f"until {pct_text(target)} per size (≥{spec.get('min_iters')} requests, at most {spec.get('duration')} s)"
