"""Pre-flight warnings: problems that would make a run on this host fail or mislead.

Each warning is one sentence that says what is wrong and what to do about it.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Iterable, List

MIN_FREE_ENV = "NEURONBENCH_MIN_CACHE_FREE_BYTES"
DEFAULT_MIN_FREE = 10 * 1024 ** 3
_GIB = 1024.0 ** 3
# Past this many busy devices (a trn1.32xlarge running a 32-worker job) one summary
# sentence is more useful than a wall of near-identical ones.
_PER_DEVICE_LIMIT = 3


def core_ranges(ids: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2,5,7-8"``, the syntax of NEURON_RT_VISIBLE_CORES."""
    ordered = sorted(set(ids))
    parts = []  # type: List[str]
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else "%d-%d" % (ordered[i], ordered[j]))
        i = j + 1
    return ",".join(parts)


def min_cache_free_bytes() -> int:
    """The free-space threshold for the compile cache (``NEURONBENCH_MIN_CACHE_FREE_BYTES``, default 10 GiB)."""
    try:
        return int(os.environ.get(MIN_FREE_ENV, ""))
    except ValueError:
        return DEFAULT_MIN_FREE


def _who(procs: List[Dict[str, Any]]) -> str:
    pids = [str(p["pid"]) for p in procs if p.get("pid") is not None]
    shown = ", ".join(pids[:6]) + (", and %d more" % (len(pids) - 6) if len(pids) > 6 else "")
    commands = []  # type: List[str]
    for proc in procs:
        if proc.get("command") and proc["command"] not in commands:
            commands.append(proc["command"])
    what = " (%s)" % "; ".join(commands[:2]) if commands else " (command not shown)"
    return "%s %s%s" % ("pid" if len(pids) == 1 else "pids", shown or "unknown", what)


def _advice(procs: List[Dict[str, Any]], free: List[int]) -> str:
    stop = "stop that process" if len({p.get("pid") for p in procs}) == 1 else "stop those processes"
    if free:
        what = "%s or pin free cores with NEURON_RT_VISIBLE_CORES=%s" % (stop, core_ranges(free))
    else:
        what = "%s first (no NeuronCore is free to pin with NEURON_RT_VISIBLE_CORES)" % stop
    return ": a run on them fails with NERR_RESOURCE_NC; %s." % what


def busy_core_warnings(devices: List[Dict[str, Any]]) -> List[str]:
    """Warnings for NeuronCores that another process already owns (runs fail with NERR_RESOURCE_NC)."""
    neuron = [d for d in devices if d.get("kind") == "neuron"]
    own = os.getpid()
    busy = [d for d in neuron if [p for p in d["processes"] if p.get("pid") != own]]
    if not busy:
        return []
    free = [c for d in neuron if d not in busy for c in d["core_ids"]]
    if len(busy) <= _PER_DEVICE_LIMIT:
        return ["NeuronCores %s on Neuron device %d are in use by %s%s"
                % (core_ranges(d["core_ids"]), d["index"], _who(d["processes"]), _advice(d["processes"], free))
                for d in busy]
    procs = list({p.get("pid"): p for d in busy for p in d["processes"]}.values())
    return ["NeuronCores %s on %d Neuron devices (%s) are in use by %d processes, %s%s"
            % (core_ranges(c for d in busy for c in d["core_ids"]), len(busy),
               core_ranges(d["index"] for d in busy), len(procs), _who(procs), _advice(procs, free))]


def sdk_warnings(env: Dict[str, Any], venv_glob: str) -> List[str]:
    """Warnings when Neuron devices are present but no Python here can drive them."""
    if not any(d.get("kind") == "neuron" for d in env["devices"]) or env.get("torch_neuronx"):
        return []
    exe = env["python"]["executable"]
    ready = [v for v in env["neuron_venvs"] if v.get("torch_neuronx") and v.get("python")]
    best = (env.get("neuron_stack_detail") or {}).get("venv")
    ready.sort(key=lambda v: v["path"] != best)  # the venv the stack detail picked (newest usable) first
    if ready:
        venv = ready[0]
        return ["torch-neuronx is not installed for %s but %s has torch-neuronx %s: register the host "
                "with `--python %s` so runs use that venv." % (exe, venv["python"], venv["torch_neuronx"],
                                                              venv["python"])]
    return ["Neuron devices are present but torch-neuronx is installed neither for %s nor in any "
            "Neuron venv (%s): on Trn2/Trn3 use the Neuron SDK 2.33 DLAMI's TorchNeuron venv "
            "(/opt/aws_neuronx_venv_torch_neuronx_2_14_0), on Inf2/Trn1 a DLAMI or venv from SDK 2.31 or earlier "
            "(torch-neuronx 2.9 + torch-xla 2.9), or install torch-neuronx." % (exe, venv_glob)]


def cache_warnings(env: Dict[str, Any]) -> List[str]:
    """A warning when the Neuron compile cache's disk is nearly full.

    Only on hosts that compile for Neuron (devices, neuronx-cc, torch-neuronx or a Neuron
    venv): the cache is irrelevant to a GPU or CPU baseline host.
    """
    neuron_host = (any(d.get("kind") == "neuron" for d in env["devices"]) or env.get("neuronx_cc")
                   or env.get("torch_neuronx") or env["neuron_venvs"])
    cache = env["compile_cache"]
    need = min_cache_free_bytes()
    if not neuron_host or cache.get("free_bytes") is None or cache["free_bytes"] >= need:
        return []
    return ["Only %.1f GiB is free for the Neuron compile cache at %s (want at least %.1f GiB): compiles "
            "fail when the disk fills, so free space or set NEURON_COMPILE_CACHE_URL to a larger disk."
            % (cache["free_bytes"] / _GIB, cache["path"], need / _GIB)]


def preflight(env: Dict[str, Any], venv_glob: str) -> List[str]:
    """All pre-flight warnings for a collected environment, most urgent first.

    Args:
        env: the dict `collect_env` is building (devices, versions, venvs, compile_cache).
        venv_glob: the Neuron venv pattern that was searched, quoted in advice.
    """
    return busy_core_warnings(env["devices"]) + sdk_warnings(env, venv_glob) + cache_warnings(env)
