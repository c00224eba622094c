"""Neuron devices, NeuronCores and the processes holding them, from ``neuron-ls``.

``neuron-ls --json-output`` prints a list with one object per device (see
tests/data/neuron/README.md).  Keys beyond the documented ones come and go
between releases (``instance_type``, ``logical_neuroncore_config``), so unknown
keys are ignored and every documented one is optional.
"""
from __future__ import annotations

import glob
import json
import os
import re
from typing import Any, Dict, List, Optional, Tuple

from remote_agent.probe import commands, sdk_packages

NOT_FOUND = "neuron-ls not found on PATH or in %s"
# The Neuron driver's device files.  Configurable so the tests can give a machine without
# Neuron a stand-in device and run the real neuron backend (with a torch_neuronx test double).
DEVICE_GLOB_ENV = "NEURONBENCH_NEURON_DEVICE_GLOB"
DEFAULT_DEVICE_GLOB = "/dev/neuron*"


def device_glob() -> str:
    return os.environ.get(DEVICE_GLOB_ENV) or DEFAULT_DEVICE_GLOB


def device_files() -> List[str]:
    """The Neuron device files present (``/dev/neuron0`` ...): empty where no Neuron driver is loaded."""
    return sorted(glob.glob(device_glob()))
_BDF_SHORT = re.compile(r"^[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)*(?:\+[0-9A-Za-z.]+)?")


def _int(value: Any) -> Optional[int]:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _bdf(value: Any) -> Optional[str]:
    """PCI address with its domain: the docs' trn2 example omits ``0000:``, real output has it."""
    if not isinstance(value, str) or not value.strip():
        return None
    value = value.strip().lower()
    return "0000:" + value if _BDF_SHORT.match(value) else value


def _processes(raw: Any) -> List[Dict[str, Any]]:
    procs = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        runtime = item.get("neuron_runtime_version")
        # `neuron-ls -a` lists non-runtime processes (neuron-monitor) with version "NA".
        runtime = runtime if isinstance(runtime, str) and runtime not in ("", "NA") else None
        command = item.get("command")
        procs.append({"pid": _int(item.get("pid")),
                      "command": command if isinstance(command, str) else "",
                      "runtime_version": runtime})
    return procs


def _device_list(doc: Any) -> List[Any]:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        # Neuron 2.34 replaces the list with an object that wraps the devices; its key is
        # not documented yet, so take the first list of device-looking objects.
        for value in doc.values():
            if isinstance(value, list) and value and isinstance(value[0], dict) \
                    and "neuron_device" in value[0]:
                return value
    raise ValueError("expected a JSON list of devices, got %s" % type(doc).__name__)


def parse_neuron_ls(text: str) -> Tuple[List[Dict[str, Any]], Optional[str]]:
    """Parse ``neuron-ls --json-output``.

    Args:
        text: the tool's stdout.

    Returns:
        (devices, instance_type): devices in the probe's shape, and the instance type
        if neuron-ls named one (Neuron 2.32 and later put it in every device object).

    Raises:
        ValueError: the text is not JSON, or not a list of device objects.
    """
    # Older tools printed a notice before the table; start at the first JSON line.
    start = re.search(r"^\s*[\[{]", text, re.MULTILINE)
    doc, _ = json.JSONDecoder().raw_decode(text[start.start():].lstrip() if start else text)
    devices, instance_type, next_core = [], None, 0
    if isinstance(doc, dict) and isinstance(doc.get("instance_type"), str):
        instance_type = doc["instance_type"]
    for position, raw in enumerate(_device_list(doc)):
        if not isinstance(raw, dict) or not ("neuron_device" in raw or "nc_count" in raw):
            raise ValueError("device entry %d is not an object with neuron_device/nc_count" % position)
        ids = raw.get("neuroncore_ids")
        core_ids = [i for i in ids if _int(i) is not None] if isinstance(ids, list) else None
        cores = _int(raw.get("nc_count"))
        if cores is None and core_ids is not None:
            cores = len(core_ids)
        if core_ids is None and cores is not None:
            # neuron-ls before neuroncore_ids numbered cores globally, device after device.
            core_ids = list(range(next_core, next_core + cores))
        next_core += cores or 0
        index = _int(raw.get("neuron_device"))
        devices.append({"kind": "neuron", "index": position if index is None else index,
                        "cores": cores, "core_ids": [int(i) for i in core_ids or []],
                        "memory_bytes": _int(raw.get("memory_size")), "bdf": _bdf(raw.get("bdf")),
                        "processes": _processes(raw.get("neuron_processes")),
                        # Trn2/Trn3: physical cores per logical one (the MFU peak per core depends on it).
                        "lnc": _int(raw.get("logical_neuroncore_config"))})
        if instance_type is None and isinstance(raw.get("instance_type"), str):
            instance_type = raw["instance_type"]
    return devices, instance_type


def _run_json(path: str) -> str:
    try:
        return commands.run_tool([path, "--json-output"])
    except commands.ToolTimeout:
        raise
    except commands.ToolError as first:
        # Neuron 2.34 drops --json-output for --output-format json; try it before giving up.
        try:
            return commands.run_tool([path, "--output-format", "json"])
        except commands.ToolError:
            raise first from None


def parse_version(text: str) -> Optional[str]:
    """The first version number in ``neuron-ls --version`` output (its format is not documented)."""
    match = _VERSION.search(text)
    return match.group(0) if match else None


def probe_neuron(missing: Dict[str, str]) -> Dict[str, Any]:
    """Run neuron-ls and describe the Neuron devices and SDK.

    Args:
        missing: receives a reason for each value that could not be read.

    Returns:
        ``{"devices": [...], "neuron_sdk": {...} | None, "instance_type": str | None}``.
    """
    result = {"devices": [], "neuron_sdk": None, "instance_type": None}  # type: Dict[str, Any]
    path = commands.find_tool("neuron-ls", [commands.NEURON_BIN_DIR])
    if path is None:
        missing["devices.neuron"] = NOT_FOUND % commands.NEURON_BIN_DIR
        missing["neuron_sdk"] = (NOT_FOUND % commands.NEURON_BIN_DIR) + " (the Neuron tools are not installed)"
        return result
    hung = False
    try:
        result["devices"], result["instance_type"] = parse_neuron_ls(_run_json(path))
        if not result["devices"]:
            missing["devices.neuron"] = "neuron-ls lists no Neuron devices (is the Neuron driver loaded?)"
    except commands.ToolError as exc:
        hung = isinstance(exc, commands.ToolTimeout)
        missing["devices.neuron"] = str(exc)
    except ValueError as exc:
        missing["devices.neuron"] = "neuron-ls printed output that is not its JSON device list: %s" % exc
    tools, why = None, "not asked: neuron-ls did not answer in time"
    if not hung:
        try:
            tools = parse_version(commands.run_tool([path, "--version"]))
            why = "`neuron-ls --version` printed no version number"
        except commands.ToolError as exc:
            why = str(exc)
    tools = tools or sdk_packages.dpkg_version("aws-neuronx-tools")
    if tools is None:
        missing["neuron_sdk.tools_version"] = why
    runtime = next((p["runtime_version"] for d in result["devices"] for p in d["processes"]
                    if p["runtime_version"]), None) or sdk_packages.dpkg_version("aws-neuronx-runtime-lib")
    if runtime is None:
        missing["neuron_sdk.runtime_version"] = ("no process is using the Neuron runtime and the "
                                                 "aws-neuronx-runtime-lib package is not in the dpkg database")
    result["neuron_sdk"] = {"tools_version": tools, "runtime_version": runtime}
    return result
