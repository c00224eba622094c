"""No orphans: a workload process dies with the process that started it.

If the supervisor is killed, its workload (and torchrun with its workers, which
torchrun puts in sessions of their own) must not run on, holding NeuronCores
that the next run needs.  Linux's PR_SET_PDEATHSIG delivers a signal to a child
when its parent dies; it survives exec, so ``_exec`` can arm it for torchrun.
"""
from __future__ import annotations

import ctypes
import os
import signal
import sys
from typing import List

PR_SET_PDEATHSIG = 1
ENV_PARENT_PID = "NEURONBENCH_PARENT_PID"


def die_with_parent(signum: int = signal.SIGTERM) -> bool:
    """Ask the kernel to send ``signum`` to this process when its parent exits (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    expected = os.environ.get(ENV_PARENT_PID)
    if expected and expected.isdigit() and os.getppid() != int(expected):
        # The parent died before prctl took effect: the signal will never come.
        os.kill(os.getpid(), signum)
    return True


def exec_guarded(argv: List[str]) -> int:
    """``agent _exec -- CMD...``: arm the parent-death signal, then become CMD."""
    if argv and argv[0] == "--":
        argv = argv[1:]
    die_with_parent()
    # CMD keeps this pid: its own children (torchrun's workers) check against it.
    os.environ[ENV_PARENT_PID] = str(os.getpid())
    os.execvp(argv[0], argv)
    return 127  # not reached
