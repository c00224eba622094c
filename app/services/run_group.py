"""The runs one command has in flight, so that one Ctrl-C can stop them all, or leave them all running.

``neuronbench run`` follows its runs on threads (one per host, each host's
repeats in turn; or one multi-node run), while the terminal's Ctrl-C reaches
the main thread.  Every run is followed through ``RunGroup.follow``, so that
thread can act on all of them at once:

- ``cancel()``: every run in flight is cancelled on every host it spans (the
  agent's cancel stops every process the run started, torchrun's workers
  included, and answers once none is left); no further run or repeat starts.
  Each ``follow`` returns the run's Result (status ``cancelled``) only after that.
- ``detach()``: stop following.  The runs go on where they are; ``follow``
  raises Detached and ``left_running`` names them, for ``runs attach`` and
  ``runs cancel``.

A run's Result is worth waiting for only once it is recorded (priced, stored): a
caller that does that after ``follow`` returns wraps both in ``holding(run)``, and
``settled()`` stays false until the block ends, so a Ctrl-C never closes the store
under a Result being written.

A run is a ``RunSession`` (one host) or a ``ClusterRun`` (several nodes, or a
Slurm job): anything with ``run_id``, ``host``, ``launched``, ``run()``,
``cancel()`` and ``detach()``.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from app.services.session import Detached, RunSession


class Followable(Protocol):
    run_id: str
    host: str
    launched: bool  # the host was asked to run it: from then on it may be going on there
    cancel_sent: bool  # a cancel reached its host(s): it may be ending by itself

    def run(self) -> dict[str, Any]: ...

    def cancel(self) -> None: ...

    def detach(self) -> None: ...


@dataclass(frozen=True)
class LeftRunning:
    """A run this command stopped following while it went on (or was still stopping) on its host."""

    run_id: str
    host: str
    cancel_sent: bool  # a cancel had gone out: it may be ending by itself


class RunGroup:
    def __init__(self, reason: str = "cancelled") -> None:
        self.reason = reason  # the first words of a cancelled run's error ("cancelled by Ctrl-C")
        self.cancelled = False
        self.detached = False
        self.left_running: list[LeftRunning] = []
        self._live: list[Followable] = []
        self._held: list[Followable] = []  # inside holding(): followed, then recorded
        self._lock = threading.Lock()

    @property
    def stopped(self) -> bool:
        """No further run may start (a repeat loop ends here)."""
        return self.cancelled or self.detached

    def follow(self, run: Followable) -> dict[str, Any]:
        """``run.run()``, cancelled or detached with the group (a run joining a stopped group is not started).

        Raises Detached when the group stopped following it; ``run.launched`` then says
        whether it was started on its host at all.
        """
        with self._lock:
            self._live.append(run)
            cancelled, detached = self.cancelled, self.detached
        if detached:
            run.detach()
        elif cancelled:
            self._cancel(run)
        try:
            result = run.run()
        except Detached:
            # A host given back when this command ends (a launched EC2 instance) takes the run with it.
            ephemeral = getattr(getattr(run, "transport", None), "ephemeral", False)
            if run.launched and not ephemeral:
                with self._lock:
                    self.left_running.append(LeftRunning(run.run_id, run.host, run.cancel_sent))
            raise
        finally:
            with self._lock:
                self._live.remove(run)
        if self.cancelled and result.get("status") == "cancelled" and not (result.get("error") or {}).get("message"):
            result["error"] = {"kind": "cancelled", "message": self.reason, "detail": ""}
        return result

    def cancel(self) -> None:
        """Cancel every run in flight on its hosts, and start no other (from any thread)."""
        with self._lock:
            self.cancelled = True
            live = list(self._live)
        for run in live:
            self._cancel(run)

    def _cancel(self, run: Followable) -> None:
        if isinstance(run, RunSession):
            run.cancel(self.reason)
        else:
            run.cancel()

    def detach(self) -> None:
        """Stop following every run in flight, leaving each going on its hosts; start no other."""
        with self._lock:
            self.detached = True
            live = list(self._live)
        for run in live:
            run.detach()

    @contextmanager
    def holding(self, run: Followable) -> Iterator[None]:
        """``run`` counts as unsettled (once launched) until this block ends: its ``follow`` and what the
        caller does with the Result after it (pricing it, storing it)."""
        with self._lock:
            self._held.append(run)
        try:
            yield
        finally:
            with self._lock:
                self._held.remove(run)

    def settled(self) -> bool:
        """Stopped, and no launched run is still followed or having its Result recorded: waiting longer
        would wait for nothing.

        A run that never launched (its host still connecting, or asking a question) never will.
        """
        with self._lock:
            return self.stopped and not any(run.launched for run in (*self._live, *self._held))
