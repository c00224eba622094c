"""A run on its own named thread that can be cancelled or left running: what a GUI (or a long CLI) needs.

``RunSession.run()`` blocks until the agent's stream ends.  ``ControlledRun``
runs it on a thread named ``run-<host>`` and reports through callbacks, which
are called on that thread (the GUI's bridge turns them into queued signals):

- ``cancel()`` asks the host's agent to stop the run (``agent cancel RUN_ID``);
  the stream then ends with status ``cancelled`` and a Result, as usual.
- ``detach()`` stops *following* the run without stopping it: the supervisor on
  the host is detached (setsid) and keeps writing ``events.jsonl``, so the run
  can be attached to again later by its ``run_id``.

With a ``recorder`` every event is stored before anyone else sees it, and the
end (a Result, a failure, or being left running) is stored too, on the run's
thread: the UI thread never waits on the database.  With ``attach_from`` the
run is one started earlier (re-attach), followed from that seq.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from app.core.results import failed_result
from app.services.recorder import RunRecorder
from app.services.session import CANCEL_TIMEOUT_S, Event, EventCallback, RunSession, cancel_run
from app.services.transport import AgentProcess, Transport
from remote_agent.protocol import RunSpec

__all__ = ["CANCEL_TIMEOUT_S", "ControlledRun", "TappedTransport", "cancel_run"]


class TappedTransport(Transport):
    """Hands every started agent process to ``on_start`` so that a detach can stop following it."""

    def __init__(self, inner: Transport, on_start: Callable[[AgentProcess], None]) -> None:
        self.inner = inner
        self.host = inner.host
        self._on_start = on_start

    def start(self, args: Sequence[str], stdin: bytes | None = None) -> AgentProcess:
        process = self.inner.start(args, stdin)
        self._on_start(process)
        return process

    def describe(self) -> str:
        return self.inner.describe()

    def run_ended(self, result: dict | None, last: bool = True) -> dict | None:
        return self.inner.run_ended(result, last)

    def release(self) -> None:
        self.inner.release()


class ControlledRun:
    """One RunSession on a named thread, with cancel and detach.

    Exactly one of ``on_done(result)``, ``on_error(exception)`` or
    ``on_detached(run_id)`` is called when the thread ends; ``on_warning(sentence)``
    when a cancel could not be delivered (the run then goes on).
    """

    def __init__(self, transport: Transport | None, spec: RunSpec, *, on_event: EventCallback,
                 on_done: Callable[[dict[str, Any]], None], on_error: Callable[[BaseException], None],
                 on_detached: Callable[[str], None] | None = None,
                 on_warning: Callable[[str], None] | None = None, run_id: str | None = None,
                 recorder: RunRecorder | None = None, attach_from: int | None = None,
                 cluster: Any = None, held_events: list[Event] | None = None,
                 on_notice: Callable[[str], None] | None = None,
                 on_refused: Callable[[int], None] | None = None) -> None:
        # A multi-node run (app.services.cluster_run.ClusterRun) is driven the same way: it has a host
        # (its nodes' names), describe(), run()/attach(), cancel() and detach() of its own.
        self.cluster = cluster
        self.held_events = held_events
        self.transport = transport if cluster is None else cluster
        self.spec = spec
        self.recorder = recorder
        self.attach_from = attach_from
        self._on_event = on_event
        self._on_done = on_done
        self._on_error = on_error
        self._on_detached = on_detached
        self._on_warning = on_warning
        self._lock = threading.Lock()
        self._process: AgentProcess | None = None
        self._detached = False
        self._cancel_wanted = False
        self._cancel_sent = False
        # The supervisor says hello before it installs its SIGTERM handler: a cancel
        # sent in between would kill it without an `end` event.  Its next event
        # comes after, so a cancel is held back until then.
        self._ready = False
        self._cancel_thread: threading.Thread | None = None
        if cluster is None:
            assert transport is not None
            self.session: Any = RunSession(TappedTransport(transport, self._started), spec, run_id=run_id,
                                           on_event=self._event, on_notice=on_notice, on_refused=on_refused)
        else:
            cluster.on_event = self._event
            cluster.on_notice = on_notice or cluster.on_notice  # each node's connection and refusal notices
            self.session = cluster
        self._thread = threading.Thread(target=self._main, name=f"run-{self.transport.host}", daemon=True)

    @property
    def run_id(self) -> str:
        return self.session.run_id

    @property
    def host(self) -> str:
        return self.transport.host

    def start(self) -> None:
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive() or bool(self._cancel_thread and self._cancel_thread.is_alive())

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the run's thread (and a cancel in flight); True when both have ended."""
        self._thread.join(timeout)
        cancel = self._cancel_thread
        if cancel is not None:
            cancel.join(timeout)
        return not self.is_alive()

    # ------------------------------------------------------------ control
    def cancel(self) -> None:
        """Ask the agent to stop the run (from any thread); the stream ends with status ``cancelled``.

        Before the run has started on its host (an EC2 instance still launching), the host
        is released instead: the launch stops and the instance is terminated.
        """
        if self.cluster is not None:
            self.cluster.cancel()  # it waits for each node to be ready for a cancel itself
            return
        with self._lock:
            self._cancel_wanted = True
            ready = self._ready
        if not ready:
            self.transport.release()
        self._cancel_if_due()

    def detach(self) -> None:
        """Stop following the run and leave it running on its host (from any thread)."""
        with self._lock:
            self._detached = True
            process = self._process
        if self.cluster is not None:
            self.cluster.detach()
        else:
            self.session.detach()  # no reconnecting to a run we let go
            if process is not None:
                process.kill()  # the local `agent run` follower, or the SSH channel: not the supervisor

    # ------------------------------------------------------------ thread side
    def _started(self, process: AgentProcess) -> None:
        with self._lock:
            self._process = process
            detached = self._detached
        if detached:
            process.kill()

    def _event(self, event: Event) -> None:
        if self.recorder is not None:
            self.recorder(event)  # stored first: what the app shows is already safe
        self._on_event(event)
        if event["type"] == "hello" or self._ready:
            return
        with self._lock:
            self._ready = True
        self._cancel_if_due()

    def _cancel_if_due(self) -> None:
        """Send the cancel once: when it is wanted, the supervisor is ready, and the run is still followed."""
        with self._lock:
            send = self._cancel_wanted and self._ready and not self._cancel_sent and not self._detached
            if send:
                self._cancel_sent = True
        if send:
            self._send_cancel()

    def _send_cancel(self) -> None:
        def cancel() -> None:
            try:
                cancel_run(self.transport, self.run_id)
            except Exception as exc:  # the run goes on, and its own stream still reports how it ends
                if self._on_warning is not None:
                    self._on_warning(f"could not cancel run {self.run_id} on {self.host}: {exc}")

        self._cancel_thread = threading.Thread(target=cancel, name=f"cancel-{self.host}", daemon=True)
        self._cancel_thread.start()

    def _main(self) -> None:
        try:
            if self.cluster is not None and self.held_events is not None:
                for event in self.held_events:
                    self._on_event(event)  # the view redraws the whole run; the store already holds these
                result = self.cluster.attach(self.held_events, (self.held_events[0] if self.held_events else {})
                                             .get("rendezvous", ""))
            elif self.attach_from is not None:
                result = self.session.attach(from_seq=self.attach_from)
            else:
                result = self.session.run()
        except BaseException as exc:
            with self._lock:
                detached = self._detached
            if detached:
                if self.recorder is not None:
                    self.recorder.abandon()
                if self._on_detached is not None:
                    self._on_detached(self.run_id)
            else:
                error = exc if isinstance(exc, Exception) else RuntimeError(repr(exc))
                # A launched host (EC2) is terminated now, and the failed Result says what it was.
                spec = self.spec.to_dict() if self.spec is not None else {}
                failed = self.transport.run_ended(failed_result(self.host, spec, self.run_id, error))
                if self.recorder is not None and failed is not None:
                    self.recorder.finish(failed)
                self._on_error(exc)
            return
        result = self.transport.run_ended(result) or result
        if self.recorder is not None:
            result = self.recorder.finish(result)
        self._on_done(result)
