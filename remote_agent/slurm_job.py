"""What Slurm says of the job behind a node's run folder: is it still active?

A Slurm node's supervisor runs on another machine than the login node that
follows it (through a shared home folder), so its pid says nothing there; the
job's state in ``squeue`` does.  ``_slurm_node`` writes the job id into the node's
run folder (``SLURM_FILE``); ``rundir.supervisor_alive`` asks this module.  It
imports no other agent module, so the run folder can use it without reaching up
into the node entry point (which imports the supervisor).
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any, Dict, Optional

SLURM_FILE = "slurm.json"
ACTIVE_STATES = ("PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "RESIZING",
                 "SIGNALING", "STAGE_OUT")
_SQUEUE_EVERY_S = 5.0
_last_look: Dict[str, Any] = {}


def job_alive(run_path: str) -> bool:
    """Whether the Slurm job of the node run folder ``run_path`` is still active (``squeue`` at most every 5 s)."""
    try:
        with open(os.path.join(run_path, SLURM_FILE)) as handle:
            job_id = str(json.load(handle)["job_id"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    seen = _last_look.get(job_id)
    if seen is not None and time.monotonic() - seen[0] < _SQUEUE_EVERY_S:
        return bool(seen[1])
    alive = _squeue_state(job_id) in ACTIVE_STATES
    _last_look[job_id] = (time.monotonic(), alive)
    return alive


def _squeue_state(job_id: str) -> Optional[str]:
    try:
        out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    state = out.stdout.decode("utf-8", "replace").strip().split("\n")[0].strip()
    return state or None
