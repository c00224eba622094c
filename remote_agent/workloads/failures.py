"""Turning a workload exception into the protocol's error kinds and one actionable sentence."""
from __future__ import annotations

import traceback
from typing import Any, Dict

from remote_agent.backends.base import BackendUnavailable
from remote_agent.workloads.problems import SpecProblem

_OOM_MARKERS = ("out of memory", "outofmemory", "cannot allocate memory", "resource_exhausted",
                "failed to allocate")
_COMPILE_MARKERS = ("neuronx-cc", "compilation failed", "compilation error", "failed to compile")
_BUSY_MARKERS = ("nerr_resource_nc", "nrt_resource", "already in use")


def classify(exc: BaseException, phase: str) -> Dict[str, Any]:
    """Map an exception raised in ``phase`` to {kind, message, detail}."""
    detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    text = str(exc) or type(exc).__name__
    lower = (type(exc).__name__ + " " + text).lower()
    if isinstance(getattr(exc, "error_kind", None), str):  # a workload's own sentence, said in full
        return {"kind": exc.error_kind, "message": text,  # type: ignore[attr-defined]
                "detail": "" if exc.__cause__ is None else "".join(traceback.format_exception(
                    type(exc.__cause__), exc.__cause__, exc.__cause__.__traceback__))}
    if isinstance(exc, SpecProblem):
        return {"kind": "bad_spec", "message": text, "detail": ""}
    if isinstance(exc, BackendUnavailable):
        return {"kind": "backend_unavailable", "message": text, "detail": ""}
    if isinstance(exc, MemoryError) or any(marker in lower for marker in _OOM_MARKERS):
        return {"kind": "oom", "message": "out of memory during %s: %s; try a smaller --batch-size" % (phase, text),
                "detail": detail}
    if any(marker in lower for marker in _BUSY_MARKERS):
        return {"kind": "runtime", "message": "the NeuronCores are busy (owned by another process): %s; stop "
                "that process (see neuron-ls) or pin free cores with NEURON_RT_VISIBLE_CORES" % text,
                "detail": detail}
    if phase == "compile" or any(marker in lower for marker in _COMPILE_MARKERS):
        return {"kind": "compile_failed", "message": "compiling the model failed: %s" % text, "detail": detail}
    return {"kind": "runtime", "message": "%s failed: %s: %s" % (phase, type(exc).__name__, text), "detail": detail}
