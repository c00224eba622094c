"""`collect_env`: everything the app needs to know about a host, as one JSON-able dict.

Every value that cannot be read is None (or [] for lists) and ``missing`` says
why, in words a user can act on; a tool that fails, hangs or prints nonsense is
recorded there and never stops the probe (STYLE.md: missing is not zero).
"""
from __future__ import annotations

import os
import sys
from typing import Any, Callable, Dict, TypeVar

from remote_agent import neuron_stack as stack
from remote_agent.probe import compile_cache, imds, neuron, nvidia, packages, preflight, system

T = TypeVar("T")


def _guarded(missing: Dict[str, str], key: str, collect: Callable[[], T], fallback: T) -> T:
    """Run one collector; a bug or a host oddity it did not foresee costs that part, not the probe."""
    try:
        return collect()
    except Exception as exc:
        missing[key] = "the probe failed here (%s: %s); please report this" % (type(exc).__name__, exc)
        return fallback


def _venv_hint(env: Dict[str, Any], missing: Dict[str, str], key: str) -> None:
    # "Not installed here" is only half the story when a Neuron venv on the same host has it.
    if env.get(key) is not None or key not in missing:
        return
    for venv in env["neuron_venvs"]:
        if venv.get(key) and venv.get("python"):
            missing[key] += "; %s has %s %s" % (venv["python"], key.replace("_", "-"), venv[key])
            return


def collect_env(quick: bool = False) -> Dict[str, Any]:
    """Probe this host: Python, packages, CPU, memory, devices, instance, SDK and warnings.

    Args:
        quick: skip the EC2 metadata lookup (up to 1 s when nothing answers), e.g. when
            the run supervisor probes again just before a run.

    Returns:
        The ``env`` of the protocol's ``probe`` event (DESIGN.md §3), JSON-serialisable.
    """
    missing = {}  # type: Dict[str, str]
    env = {"hostname": system.hostname(), "os": system.os_name(),
           "python": system.python_info()}  # type: Dict[str, Any]
    env.update(_guarded(missing, "packages", lambda: packages.installed_versions(missing),
                        {key: None for key, _ in packages.PACKAGES}))
    env["cpu"] = _guarded(missing, "cpu", lambda: system.cpu_info(missing),
                          {"model": None, "count": os.cpu_count() or 1, "usable": os.cpu_count() or 1})
    env["mem_bytes"] = _guarded(missing, "mem_bytes", lambda: system.mem_bytes(missing), None)

    found = _guarded(missing, "devices.neuron", lambda: neuron.probe_neuron(missing),
                     {"devices": [], "neuron_sdk": None, "instance_type": None})
    gpus = _guarded(missing, "devices.gpu", lambda: nvidia.probe_gpus(missing), [])
    env["devices"] = found["devices"] + gpus
    env["neuron_cores"] = sum(d["cores"] or 0 for d in env["devices"] if d["kind"] == "neuron")
    env["gpus"] = len(gpus)

    if quick:
        where = {"instance_type": None, "region": None}  # type: Dict[str, Any]
        missing["instance_type"] = missing["region"] = "not looked up (quick probe)"
    else:
        where = _guarded(missing, "instance_type", lambda: imds.lookup(missing),
                         {"instance_type": None, "region": None})
    if where["instance_type"] is None and found["instance_type"]:
        # Neuron 2.32+ neuron-ls knows the instance type too: good enough when IMDS is unreachable.
        where["instance_type"] = found["instance_type"]
        missing.pop("instance_type", None)
    env.update(where)

    env["neuron_sdk"] = found["neuron_sdk"]
    env["neuron_venvs"] = _guarded(missing, "neuron_venvs", lambda: packages.neuron_venvs(missing), [])
    for key in ("torch_neuronx", "torch_xla"):
        _venv_hint(env, missing, key)
    env["compile_cache"] = _guarded(missing, "compile_cache", lambda: compile_cache.compile_cache(missing),
                                    {"path": None, "free_bytes": None})
    # Which Neuron PyTorch stack this Python runs (native TorchNeuron, xla, or none), and the venv to use.
    env["neuron_stack_detail"] = _guarded(missing, "neuron_stack", lambda: stack.describe_stack(env), None)
    env["neuron_stack"] = (env["neuron_stack_detail"] or {}).get("stack")
    if env["neuron_stack"] is None and "neuron_stack" not in missing:
        missing["neuron_stack"] = "torch-neuronx is not installed for %s" % sys.executable
    venv_glob = " ".join(packages.venv_globs())
    env["warnings"] = _guarded(missing, "warnings", lambda: preflight.preflight(env, venv_glob), [])
    env["missing"] = missing
    return env
