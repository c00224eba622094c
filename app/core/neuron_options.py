"""The Neuron options of a run in words (pure): which stack, which mode, where the compiler flags go, cold or not.

One place says them for every view: the form's hints, the spec's one-line summary (the live view's heading, the
Result text, reports' Runs list), History's backend cell and Compare's stack cell.  The channel a flag reaches
is the one the backends use (docs/neuron.md): ``torch_neuronx.trace``'s ``compiler_args`` for XLA-stack inference
and generation, ``NEURON_CC_FLAGS`` for XLA-stack training and everything on the native stack.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

TRACE_ARGS = "torch_neuronx.trace compiler_args"
CC_FLAGS_ENV = "NEURON_CC_FLAGS"


def flags_channel(workload: str, stack: str | None) -> str:
    """Where ``--neuron-cc-flags`` reaches the compiler on ``stack`` (``native``, ``xla``, or None: unknown)."""
    if stack == "native" or workload == "train":
        return CC_FLAGS_ENV
    if stack == "xla":
        return TRACE_ARGS
    return f"{TRACE_ARGS} (xla stack) or {CC_FLAGS_ENV} (native stack)"


def host_stack(env: Mapping[str, Any] | None) -> str | None:
    """The Neuron stack a probed host has (``native``, ``xla``), or None."""
    env = env or {}
    return env.get("neuron_stack") or (env.get("neuron_stack_detail") or {}).get("stack") or None


def host_stack_text(env: Mapping[str, Any] | None) -> str:
    """``native (TorchNeuron 2.13.3.0, torch 2.13.0), 4 logical cores (LNC 2)``, or why there is none."""
    env = env or {}
    stack = host_stack(env)
    detail = env.get("neuron_stack_detail") or {}
    if not stack:
        return detail.get("problem") or "no Neuron stack"
    versions = ", ".join(f"{name} {env[key]}" for name, key in (("torch-neuronx", "torch_neuronx"), ("torch", "torch"))
                         if env.get(key))
    cores = f", {detail['logical_cores']} logical cores" if detail.get("logical_cores") else ""
    lnc = f" (LNC {detail['lnc']})" if detail.get("lnc") else ""
    return f"{stack}" + (f" ({versions})" if versions else "") + cores + lnc


def uses_neuron(spec: Mapping[str, Any]) -> bool:
    return spec.get("backend") in ("neuron", "auto") and spec.get("workload") != "serve"


def neuron_settings(spec: Mapping[str, Any], stack: str | None = None) -> list[str]:
    """The Neuron options a spec sets, each in a few words (empty when it sets none):
    ``["stack native", "eager", "flags --auto-cast=none (NEURON_CC_FLAGS)", "cold compile"]``.

    ``stack``: the stack that ran (a Result's), when the spec left it to the host.
    """
    if not uses_neuron(spec):
        return []
    words = []
    chosen = spec.get("neuron_stack") or ""
    if chosen:
        words.append(f"stack {chosen}")
    if spec.get("neuron_mode") == "eager":
        words.append("eager")
    flags = " ".join(str(spec.get("neuron_cc_flags") or "").split())
    if flags:
        channel = flags_channel(str(spec.get("workload") or ""), chosen or stack)
        words.append(f"flags {flags} ({channel})")
    if spec.get("compile_cache_reuse") is False:
        words.append("cold compile")
    return words
