"""Ctrl-C while ``neuronbench run`` follows its runs: cancel, then stop waiting, then quit.

- The first Ctrl-C cancels every run on every host it spans (a local, SSH, multi-node
  or Slurm run; an EC2 host is terminated with it) and keeps waiting until no process
  of any is left: each run is stored ``cancelled`` with every event it sent, and no
  further repeat starts.
- A second one stops waiting.  The runs are left as they are (going on, or still
  stopping), stored ``unfinished``, and the ``runs attach`` / ``runs cancel`` lines for
  each are printed.
- A third quits at once.

The runs are followed on a worker thread; Python runs signal handlers on the main
thread, which only waits here and turns each Ctrl-C into a call on the RunGroup.
"""
from __future__ import annotations

import shlex
import signal
import sys
import threading
from collections.abc import Callable
from typing import IO, Any, TypeVar

from app.services.run_group import RunGroup

T = TypeVar("T")
CTRL_C_REASON = "cancelled by Ctrl-C"
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report a program that Ctrl-C ended
_POLL_S = 0.2


class _CtrlC:
    """SIGINT handler: counts presses (the third raises KeyboardInterrupt: quit now) and wakes the waiter."""

    def __init__(self) -> None:
        self.count = 0
        self.wake = threading.Event()

    def __call__(self, _signum: int, _frame: Any) -> None:
        self.count += 1
        if self.count >= 3:
            raise KeyboardInterrupt
        self.wake.set()


def say(text: str) -> None:
    print(f"neuronbench: {text}", file=sys.stderr)


def follow_interruptibly(work: Callable[[], T], group: RunGroup, cancelling: str) -> T | None:
    """``work()`` (which follows its runs through ``group``) on a thread, Ctrl-C acting on ``group``.

    Returns what ``work`` returned, or None when it was stopped and waiting longer would wait
    only for hosts where nothing was started (one still connecting, or asking a question).
    ``cancelling`` is the sentence said on the first Ctrl-C.
    """
    if threading.current_thread() is not threading.main_thread():
        return work()  # signals reach the main thread only: whoever runs there handles them
    outcome: dict[str, Any] = {}
    ctrl_c = _CtrlC()

    def main() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # handed to the main thread
            outcome["error"] = exc
        finally:
            ctrl_c.wake.set()

    previous = signal.signal(signal.SIGINT, ctrl_c)
    try:
        worker = threading.Thread(target=main, name="runs", daemon=True)
        worker.start()
        acted = 0
        while worker.is_alive():
            ctrl_c.wake.wait(_POLL_S)
            ctrl_c.wake.clear()
            if ctrl_c.count > acted:
                acted = ctrl_c.count
                if acted == 1:
                    say(cancelling)
                    group.cancel()
                else:
                    say("stopped waiting: the runs are left as they are on their hosts (Ctrl-C again to quit "
                        "at once)")
                    group.detach()
            if acted and group.settled():
                break
        else:
            worker.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def print_left_running(group: RunGroup, data_dir: str | None, out: IO[str] | None = None) -> None:
    """For each run left on its hosts: what state it was left in, and the commands that follow or stop it."""
    out = out or sys.stderr
    extra = f" --data-dir {shlex.quote(data_dir)}" if data_dir else ""
    for left in group.left_running:
        state = ("a cancel was sent: it may still be stopping" if left.cancel_sent else "it goes on")
        print(f"neuronbench: run {left.run_id} on {left.host} was left without waiting for its end ({state}):\n"
              f"  neuronbench runs attach {left.run_id}{extra}    # follow it again; its events are kept\n"
              f"  neuronbench runs cancel {left.run_id}{extra}    # stop it and every process it started",
              file=out)
