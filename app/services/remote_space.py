"""Free space on an SSH host's disk where the agent goes: a floor before the upload, and a full disk named.

A full disk used to surface as paramiko's "size mismatch in put! 65536 != 95", or
as a Python traceback from the unpack.  The host inspection (deploy.py) reports
the free space of the agent's folder; below ``DEPLOY_MIN_FREE_BYTES`` nothing is
uploaded, and an upload or unpack that fails on a disk found full afterwards
(bytes or inodes) says that, in one sentence naming the host, the folder and the
free space.  The run's own floor is the agent's (remote_agent/diskspace.py).
"""
from __future__ import annotations

import paramiko

from app.core.errors import DeployError
from app.services.remote_exec import run_command

# The agent with its bytecode is about 1 MiB, timm installed for it about 10 MiB: room for both, and to spare.
DEPLOY_MIN_FREE_BYTES = 32 << 20
DISK_FULL_TEXTS = ("[Errno 28]", "No space left on device", "[Errno 122]", "Disk quota exceeded")

# Python 3.8+ on the host; argv: a folder that may not exist yet (its nearest existing parent is measured).
FREE_SPACE_PY = """\
import os, sys
p = os.path.abspath(sys.argv[1])
while not os.path.isdir(p) and os.path.dirname(p) != p:
    p = os.path.dirname(p)
s = os.statvfs(p)
sys.stdout.write("nb-free=%d\\nnb-inodes=%d\\n" % (s.f_bavail * s.f_frsize, s.f_favail))
"""


def size_text(size: float) -> str:
    """1.5 MiB, 312 KiB, 0 B (binary units, as ``df -h``)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024:
            return f"{size:.0f} {unit}" if unit == "B" or size >= 100 else f"{size:.1f} {unit}"
        size /= 1024.0
    return f"{size:.1f} TiB"


def low_space_error(host: str, folder: str, free: int, floor: int = DEPLOY_MIN_FREE_BYTES) -> DeployError | None:
    """The pre-flight's refusal when ``folder`` on ``host`` has less than ``floor`` free, else None."""
    if free >= floor:
        return None
    return DeployError(f"{host} has only {size_text(free)} free on the disk holding {folder}; NeuronBench needs at "
                       f"least {size_text(floor)} there for its agent (and more for each run): free some space "
                       f"there and try again")


def free_space(transport: paramiko.Transport, python: str, folder: str) -> tuple[int, int] | None:
    """(bytes, inodes) free on the host's disk holding ``folder``; None when the host would not say."""
    result = run_command(transport, [python, "-c", FREE_SPACE_PY, folder], timeout=30)
    found = dict(line[3:].split("=", 1) for line in result.text().splitlines()
                 if line.startswith("nb-") and "=" in line)
    try:
        return int(found["free"]), int(found["inodes"])
    except (KeyError, ValueError):
        return None


def disk_full_error(transport: paramiko.Transport, python: str, folder: str, host: str, doing: str,
                    needed: int, failure: str = "") -> DeployError | None:
    """After ``doing`` failed on ``host``: the full-disk sentence if that was why (else None: the caller's error).

    It was when the failure says ENOSPC, or when the disk now has less than ``needed`` bytes or no inode free.
    """
    try:
        space = free_space(transport, python, folder)
    except Exception:  # the connection went too: the caller's own error says so
        space = None
    said_full = any(text in failure for text in DISK_FULL_TEXTS)
    if space is None:
        if not said_full:
            return None
        return DeployError(f"could not {doing} on {host}: no space left on the disk holding {folder}: free some "
                           f"space there and try again")
    free, inodes = space
    if not said_full and free >= needed and inodes > 0:
        return None
    inode_note = ", and no inode free" if inodes == 0 else ""
    return DeployError(f"could not {doing} on {host}: no space left on the disk holding {folder} ({size_text(free)} "
                       f"free{inode_note}): free some space there and try again")
