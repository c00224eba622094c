"""NVIDIA GPUs, from ``nvidia-smi --query-gpu`` CSV output."""
from __future__ import annotations

import csv
from typing import Any, Dict, List, Optional

from remote_agent.probe import commands

QUERY = "index,name,memory.total,driver_version,uuid"
ARGS = ["--query-gpu=" + QUERY, "--format=csv,noheader,nounits"]
_MIB = 1024 * 1024


def field_text(text: str) -> Optional[str]:
    # nvidia-smi writes "[N/A]" or "[Not Supported]" for a field it cannot read.
    text = text.strip()
    return None if not text or text.startswith("[") else text


def _number(text: str) -> Optional[int]:
    value = field_text(text)
    try:
        return int(float(value)) if value is not None else None
    except ValueError:
        return None


def parse_query(text: str) -> List[Dict[str, Any]]:
    """Parse the CSV that ``nvidia-smi --query-gpu=index,name,memory.total,driver_version,uuid
    --format=csv,noheader,nounits`` prints.

    Args:
        text: the tool's stdout, one GPU per line; memory.total is in MiB.

    Returns:
        One device dict per GPU, with ``memory_bytes`` in bytes.

    Raises:
        ValueError: a line does not have the five queried fields.
    """
    gpus = []
    rows = [row for row in csv.reader(text.splitlines(), skipinitialspace=True) if row]
    for number, row in enumerate(rows, 1):
        if len(row) != 5:
            raise ValueError("line %d has %d fields, expected 5 (%s): %r"
                             % (number, len(row), QUERY, ",".join(row)[:120]))
        index, name, memory, driver, uuid = row
        position = _number(index)
        if position is None:
            raise ValueError("line %d: GPU index %r is not a number" % (number, index.strip()[:40]))
        mib = _number(memory)
        gpus.append({"kind": "gpu", "index": position, "name": field_text(name),
                     "memory_bytes": mib * _MIB if mib is not None else None,
                     "driver": field_text(driver), "uuid": field_text(uuid)})
    return gpus


def probe_gpus(missing: Dict[str, str]) -> List[Dict[str, Any]]:
    """The host's NVIDIA GPUs, or [] with ``missing['devices.gpu']`` saying why."""
    path = commands.find_tool("nvidia-smi")
    if path is None:
        missing["devices.gpu"] = "nvidia-smi not found on PATH (no NVIDIA driver installed)"
        return []
    try:
        gpus = parse_query(commands.run_tool([path] + ARGS))
    except commands.ToolError as exc:
        missing["devices.gpu"] = str(exc)
        return []
    except ValueError as exc:
        missing["devices.gpu"] = "nvidia-smi printed output that is not the queried CSV: %s" % exc
        return []
    if not gpus:
        missing["devices.gpu"] = "nvidia-smi lists no GPUs"
    return gpus
