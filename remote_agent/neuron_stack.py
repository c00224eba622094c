"""Which Neuron PyTorch stack a Python has: TorchNeuron (``native``), torch-xla + trace (``xla``), or none.

From installed versions only (no import: importing torch_neuronx may start the Neuron runtime):

- native: torch-neuronx 2.10 or later (2.13.3.0.x, 2.14.3.0.x in SDK 2.33), whose first two numbers
  are the torch family it was built for: ``torch`` must be of the same family.
- xla: torch-neuronx 2.9.0.2.x (SDK <= 2.31), with torch-xla beside it.

Trn2/Trn3 run the native stack (SDK 2.33, public beta); Inf2/Trn1 stay on the XLA stack (SDK <= 2.31).
Stdlib only, Python 3.8+: shared by the probe, the agent's backend registry and its pre-flight.
"""
from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

NATIVE_MIN = (2, 10)
XLA_ONLY_FAMILIES = ("inf2.", "trn1.", "trn1n.")  # instance types TorchNeuron does not run on
NATIVE_VENV = "/opt/aws_neuronx_venv_torch_neuronx_2_14_0"  # SDK 2.33's DLAMI venv


def family(version: Optional[str]) -> Optional[Tuple[int, int]]:
    """``(major, minor)`` of a version string, or None."""
    match = re.match(r"(\d+)\.(\d+)", version or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def classify(torch: Optional[str], neuronx: Optional[str], torch_xla: Optional[str]) -> Tuple[Optional[str],
                                                                                               Optional[str]]:
    """``(stack, problem)``: the stack these versions make (None: none), and why it cannot run (None: it can)."""
    nx = family(neuronx)
    if nx is None:
        return None, None
    if nx < NATIVE_MIN:
        if not torch_xla:
            return "xla", ("torch-neuronx %s is the XLA stack, which needs torch-xla beside it (pip install "
                           "torch-xla==%d.%d.*)" % (neuronx, nx[0], nx[1]))
        return "xla", None
    tf = family(torch)
    if tf != nx:
        return "native", ("torch-neuronx %s is built for torch %d.%d but this Python has torch %s: install "
                          "torch==%d.%d.* (TorchNeuron's family must match torch's)"
                          % (neuronx, nx[0], nx[1], torch or "(none)", nx[0], nx[1]))
    return "native", None


def native_refused_on(instance_type: Optional[str]) -> bool:
    return bool(instance_type) and str(instance_type).startswith(XLA_ONLY_FAMILIES)


def describe_stack(env: Dict[str, Any]) -> Dict[str, Any]:
    """The probe's ``neuron_stack_detail``: stack, versions, logical cores, the venv to use and the others."""
    stack, problem = classify(env.get("torch"), env.get("torch_neuronx"), env.get("torch_xla"))
    devices = [d for d in env.get("devices") or [] if d.get("kind") == "neuron"]
    lnc = next((d.get("lnc") for d in devices if d.get("lnc")), None)
    venvs: List[Dict[str, Any]] = []
    for venv in env.get("neuron_venvs") or []:
        v_stack, v_problem = classify(venv.get("torch"), venv.get("torch_neuronx"), venv.get("torch_xla"))
        venvs.append(dict(venv, stack=v_stack, problem=v_problem))
    wanted = "xla" if native_refused_on(env.get("instance_type")) else "native"
    usable = [v for v in venvs if v["stack"] and not v["problem"] and v.get("python")]
    usable.sort(key=lambda v: (v["stack"] == wanted, family(v.get("torch_neuronx")) or (0, 0)), reverse=True)
    best = usable[0] if usable else None
    return {
        "stack": stack,
        "problem": problem,
        "torch": env.get("torch"),
        "torch_neuronx": env.get("torch_neuronx"),
        "torch_xla": env.get("torch_xla"),
        "neuronx_cc": env.get("neuronx_cc"),
        "sdk": env.get("neuron_sdk"),
        "logical_cores": env.get("neuron_cores") if devices else None,
        "lnc": lnc,
        "venv": best["path"] if best else None,
        "venv_stack": best["stack"] if best else None,
        "other_venvs": [v["path"] for v in venvs if best is None or v["path"] != best["path"]],
    }


def stack_problem(wanted: str, env: Dict[str, Any]) -> Optional[str]:
    """Why a ``--neuron-stack`` (or the stack the host has, ``wanted`` empty) cannot run here, or None."""
    detail = env.get("neuron_stack_detail") or describe_stack(env)
    have = detail.get("stack")
    instance = env.get("instance_type")
    if wanted == "native" and native_refused_on(instance):
        return ("--neuron-stack native needs Trn2 or Trn3 (TorchNeuron runs nowhere else), but this host is %s: "
                "run with --neuron-stack xla (torch-neuronx 2.9 with torch-xla, Neuron SDK 2.31 or earlier)"
                % instance)
    if have is None:
        venv = detail.get("venv")
        hint = ("register the host with --python %s/bin/python" % venv if venv else
                "use the Neuron DLAMI's %s (SDK 2.33, Trn2/Trn3) or an SDK <= 2.31 venv with torch-neuronx 2.9 "
                "and torch-xla (Inf2/Trn1)" % NATIVE_VENV)
        found = "torch %s" % detail.get("torch") if detail.get("torch") else "no torch"
        return "this Python has %s and no torch-neuronx, so neither Neuron stack can run: %s" % (found, hint)
    if wanted and wanted != have:
        return ("--neuron-stack %s asked for, but this Python has the %s stack (torch-neuronx %s): %s"
                % (wanted, have, detail.get("torch_neuronx"),
                   "register the host with --python %s/bin/python" % detail["venv"]
                   if detail.get("venv") and detail.get("venv_stack") == wanted else
                   "drop --neuron-stack to run the %s stack" % have))
    return detail.get("problem")
