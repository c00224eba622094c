"""A sweep with one failed point is still a result: status "partial", the finished points kept.

The agent marks such a run "partial" itself (remote_agent/summary.run_status) and keeps the failed point in the
sweep with its sentence.  Runs stored before that were "failed" with their finished points in the Result and the
failure only in ``error``: ``settled_status`` reads those as partial too, so Compare, History, reports and the job
projection use what finished, whichever agent recorded it.
"""
from __future__ import annotations

from typing import Any

SWEEPS = ("infer", "generate")  # workloads whose Result is a list of points, each its own process


def sweep_points(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The points of an infer or generate Result (finished and failed), [] for any other."""
    result = result or {}
    workload = result.get("workload")
    if workload not in SWEEPS:
        return []
    return [p for p in result.get(workload) or [] if isinstance(p, dict)]


def finished(point: dict[str, Any]) -> bool:
    """A point that measured something (an infer row's throughput, a generate point's output tok/s)."""
    if point.get("error"):
        return False
    return point.get("throughput_per_s") is not None or point.get("output_tok_s") is not None


def point_name(point: dict[str, Any]) -> str:
    """``batch 16``, ``batch 4 · seq 128``, ``batch 4 · 128/128``: the shape a sentence names."""
    name = f"batch {point.get('batch_size')}"
    if point.get("input_len") is not None:
        return f"{name} · {point.get('input_len')}/{point.get('output_len')}"
    return name + (f" · seq {point['seq_len']}" if point.get("seq_len") is not None else "")


def failed_points(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``[{"point": "batch 16", "batch_size": 16, ..., "message": sentence}]``: every point that failed.

    A run recorded before points carried their own error names its one failure in the Result's ``error``: it is
    the point after the last one that finished (a failed point stopped the sweep), or unnamed when that is unknown.
    """
    result = result or {}
    points = sweep_points(result)
    out = [{"point": point_name(p), **{k: p.get(k) for k in ("batch_size", "seq_len", "input_len", "output_len")},
            "kind": (p.get("error") or {}).get("kind"), "message": (p.get("error") or {}).get("message") or ""}
           for p in points if p.get("error")]
    error = result.get("error") or {}
    if not out and error.get("message") and any(finished(p) for p in points):
        out.append({"point": _unrun_point(result), "batch_size": None, "seq_len": None, "input_len": None,
                    "output_len": None, "kind": error.get("kind"), "message": str(error["message"])})
    return out


def _unrun_point(result: dict[str, Any]) -> str:
    """The first shape of the spec with no finished point (old Results): "batch 16", or "a later point"."""
    spec = result.get("spec") or {}
    done = {p.get("batch_size") for p in sweep_points(result) if finished(p)}
    missing = [b for b in spec.get("batch_sizes") or [] if b not in done]
    return f"batch {missing[0]}" if missing else "a later point"


def settled_status(status: str, result: dict[str, Any] | None) -> str:
    """``partial`` for a failed sweep that kept finished points (whoever recorded it), else ``status``."""
    if status != "failed" or not result:
        return status
    points = sweep_points(result)
    if not any(finished(p) for p in points):
        return status
    if any(p.get("error") for p in points):
        return "partial"
    # Recorded before failed points were kept: the failure is the Result's; some asked-for shape never finished.
    spec = result.get("spec") or {}
    asked = len(spec.get("batch_sizes") or []) * max(1, len(spec.get("seq_lens") or [])) \
        if result.get("workload") == "infer" else \
        len(spec.get("batch_sizes") or []) * max(1, len(spec.get("input_lens") or [])) \
        * max(1, len(spec.get("output_lens") or []))
    done = sum(1 for p in points if finished(p))
    return "partial" if (result.get("error") or {}).get("message") and done < asked else status


def partial_sentence(result: dict[str, Any] | None) -> str:
    """``partial: batch 16 failed (out of memory …); the finished points are kept`` (empty when none failed)."""
    failed = failed_points(result)
    if not failed:
        return ""
    said = "; ".join(f"{f['point']} failed: {f['message']}" for f in failed)
    return f"partial: {said}; the finished points are kept"
