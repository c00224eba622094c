"""No orphans: a workload process dies with the process that started it.

If the supervisor is killed, its workload (and torchrun with its workers, which
torchrun puts in sessions of their own) must not run on, holding NeuronCores
that the next run needs.  Linux's PR_SET_PDEATHSIG delivers a signal to a child
when its parent dies; it survives exec, so ``_exec`` can arm it for torchrun.
"""
from __future__ import annotations

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
    import ctypes  # here: every agent start imports this module, only workload processes need ctypes

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


# Every process of a run carries this variable (set when the supervisor is started, inherited by
# everything below it): ``cancel`` finds them all by it, even those that left the run's process
# group or session (torchrun starts its workers with start_new_session=True).
ENV_RUN_ID = "NEURONBENCH_RUN_ID"


def run_processes(run_id: str) -> List[int]:
    """Pids of this user's processes started for ``run_id`` (Linux: read from /proc/<pid>/environ)."""
    marker = ("%s=%s" % (ENV_RUN_ID, run_id)).encode()
    found = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return found
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % name, "rb") as handle:
                if marker in handle.read().split(b"\0"):
                    found.append(int(name))
        except OSError:  # gone already, or another user's process
            continue
    return found


def signal_all(pids: List[int], signum: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass
