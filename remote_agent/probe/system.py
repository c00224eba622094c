"""Facts about the host itself: Python, OS, CPU and memory (stdlib and /proc only)."""
from __future__ import annotations

import os
import platform
import socket
import sys
from typing import Any, Dict, Optional

CPUINFO = "/proc/cpuinfo"
MEMINFO = "/proc/meminfo"


def python_info() -> Dict[str, str]:
    """The interpreter running the agent: the one a run would use unless told otherwise."""
    return {
        "version": platform.python_version(),
        "executable": sys.executable,
        "implementation": platform.python_implementation(),
    }


def hostname() -> str:
    """This host's name as it calls itself (no DNS lookup, so no network traffic)."""
    return socket.gethostname()


def os_name() -> str:
    """A one-line description of the OS and kernel, e.g. ``Linux-6.8.0-1021-aws-x86_64-with-glibc2.35``."""
    return platform.platform()


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except OSError:
        return None


def cpu_model(missing: Dict[str, str]) -> Optional[str]:
    """The CPU model name from /proc/cpuinfo, or None with ``missing['cpu.model']`` set."""
    text = _read(CPUINFO)
    if text is None:
        missing["cpu.model"] = "%s is not readable on this OS" % CPUINFO
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "model name" and value.strip():
            return value.strip()
    # Arm hosts (Graviton) list implementer/part codes instead of a model name.
    missing["cpu.model"] = "%s has no 'model name' line (usual on Arm CPUs)" % CPUINFO
    return None


def cpu_info(missing: Dict[str, str]) -> Dict[str, Any]:
    """CPU model, logical CPU count, and how many of them this process may use.

    ``usable`` follows the scheduler affinity mask, which is what a container
    (cpuset) or ``taskset`` leaves to the workload's data loaders and torchrun.
    """
    count = os.cpu_count() or 1
    usable = count
    if hasattr(os, "sched_getaffinity"):
        try:
            usable = len(os.sched_getaffinity(0))
        except OSError:
            pass
    return {"model": cpu_model(missing), "count": count, "usable": usable}


def mem_bytes(missing: Dict[str, str]) -> Optional[int]:
    """Total host memory in bytes (MemTotal), or None with ``missing['mem_bytes']`` set."""
    text = _read(MEMINFO)
    if text is not None:
        for line in text.splitlines():
            if line.startswith("MemTotal:"):
                parts = line.split()
                if len(parts) >= 2 and parts[1].isdigit():
                    # /proc/meminfo says "kB" but means KiB.
                    return int(parts[1]) * 1024
    try:
        # Not Linux (e.g. the `local` host is a Mac): the POSIX page counts still answer.
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        missing["mem_bytes"] = "no MemTotal in %s and no sysconf page count" % MEMINFO
        return None
