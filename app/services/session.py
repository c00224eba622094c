"""Running the agent on one host and turning its event stream into a Result.

A ``RunSession`` starts ``agent run`` through a Transport, checks every line
against protocol v1, hands each event to the caller's callback (on the calling
thread: the CLI prints progress, the GUI's bridge turns it into a queued
signal), and returns the Result JSON with the host filled in.
"""
from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from app.core.errors import AgentError, ConnectError, NeuronBenchError, ProtocolViolation
from app.core.quoting import clean
from app.core.refused_events import RefusedEvents
from app.core.results import failed_result
from app.services.transport import AgentProcess, Transport
from remote_agent.protocol import NodePlacement, ProtocolError, RunSpec, SeqTracker, SpecError, decode, new_run_id

Event = dict[str, Any]
EventCallback = Callable[[Event], None]

# How long a session keeps trying to reconnect to a host whose connection dropped (the run goes on there).
RECONNECT_FOR_S = 15 * 60
BACKOFF_S = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
AGENT_EXIT_NO_SUCH_RUN = 2  # remote_agent.runner EXIT_BAD_INPUT: `attach` found no such run
# Result blocks only the app writes (the price, a launched instance, a cluster's nodes, the refusals):
# an agent's Result that carries them has them dropped, not trusted.
APP_BLOCKS = ("events_refused", "ec2", "nodes", "repeat", "slurm")
# `agent cancel` gives the workload 15 s to stop, then SIGKILLs what is left and checks it is gone.
CANCEL_TIMEOUT_S = 30.0


class Detached(Exception):
    """The app stopped following the run (``detach``): it goes on on its host, to be attached to later."""


def cancel_run(transport: Transport, run_id: str, timeout: float = CANCEL_TIMEOUT_S) -> bool:
    """Stop a run on its host; True when the agent did (False: it had already ended, or is not there)."""
    return agent_cancel(transport, run_id, timeout)[0] == 0


def agent_cancel(transport: Transport, run_id: str, timeout: float = CANCEL_TIMEOUT_S) -> tuple[int | None, str]:
    """``agent cancel RUN_ID``: its exit status (None: no answer in time) and its stderr.

    It returns once no process of the run is left on the host (or says which survived).
    """
    process = transport.start(["cancel", run_id])
    for _ in process.lines():
        pass  # `cancel` prints nothing on stdout; drain it so the agent never blocks on a full pipe
    code = process.wait(timeout=timeout)
    return code, process.stderr_text()


def _stderr_sentence(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "it printed nothing on stderr"


class EventStream:
    """Reads one agent command's stdout as validated events.

    ``skip_through``: events up to that seq are already held (a re-attach replays
    hello, and the agent may repeat what we have): they are checked, not passed on.
    A line that protocol v1 refuses (``decode``) is counted in ``refused`` (or
    handed to ``on_refused``) and the stream goes on; only an event out of order
    ends it.
    """

    def __init__(self, process: AgentProcess, host: str, on_event: EventCallback | None = None,
                 skip_through: int = 0, on_refused: Callable[[str], None] | None = None) -> None:
        self.process = process
        self.host = host
        self.on_event = on_event
        self.skip_through = skip_through
        # Not every event: a run streams telemetry for hours, and the caller's callback keeps what it
        # needs (the CLI's --events file, the store, the GUI's ring buffers).  Only the first of each type stays.
        self.count = 0  # events passed on (replays of held events are not counted)
        self._first: dict[str, Event] = {}
        self.end: Event | None = None
        self.exit_code: int | None = None
        self._tracker = SeqTracker()
        self.refused = RefusedEvents()
        self.on_refused = on_refused

    def pump(self) -> None:
        """Consume the stream to its end; raise ProtocolViolation on events out of order."""
        for line in self.process.lines():
            if not line.strip():
                continue
            try:
                event = decode(line)
            except ProtocolError as exc:
                self.refused.add(str(exc))
                if self.on_refused is not None:
                    self.on_refused(str(exc))
                continue
            try:
                self._tracker.check(event)
            except ProtocolError as exc:
                self.process.kill()
                # "the first event must be hello" after a refused hello: the refusal is what to read
                said = f" ({self.refused.summary()})" if self.refused.count else ""
                raise with_refusals(ProtocolViolation(f"the agent on {self.host} broke protocol v1: {exc}{said}",
                                                      detail=self.process.stderr_text()), self.refused) from None
            if event["seq"] <= self.skip_through:
                continue
            self.count += 1
            self._first.setdefault(event["type"], event)
            if self.on_event is not None:
                self.on_event(event)
            if event["type"] == "end":
                self.end = event
        self.exit_code = self.process.wait(timeout=10)

    @property
    def last_seq(self) -> int:
        """The seq of the last event received (where an attach would resume)."""
        return self._tracker.last_seq

    def first(self, type_: str) -> Event | None:
        return self._first.get(type_)

    def died_error(self, doing: str, refused: RefusedEvents | None = None) -> AgentError:
        stderr = self.process.stderr_text()
        refused = refused or self.refused
        said = f"; {refused.summary()}" if refused.count else ""
        return with_refusals(AgentError(f"the agent on {self.host} stopped before {doing}: "
                                        f"{_stderr_sentence(stderr)}{said}", detail=stderr, kind="runtime"), refused)


def with_refusals(error: NeuronBenchError, refused: RefusedEvents) -> NeuronBenchError:
    """``error``, carrying the run's ``events_refused`` block for the failed Result (``failed_result``)."""
    if refused.count:
        error.events_refused = refused.to_dict()  # type: ignore[attr-defined]
    return error


class RunSession:
    """One benchmark run on one host, followed to its end across dropped connections.

    The run itself is detached on the host (DESIGN.md §3).  When the transport
    loses its connection, the session reconnects with backoff and attaches from
    the last seq it holds: ``on_event`` sees every event once, in seq order.
    ``on_notice`` receives sentences about the connection (lost, reconnected).
    """

    def __init__(self, transport: Transport, spec: RunSpec | None, run_id: str | None = None,
                 on_event: EventCallback | None = None, on_notice: Callable[[str], None] | None = None,
                 reconnect_for_s: float = RECONNECT_FOR_S, placement: NodePlacement | None = None,
                 on_refused: Callable[[int], None] | None = None) -> None:
        self.transport = transport
        self.spec = spec
        self.placement = placement  # this host's place in a multi-node run (None: a run of its own)
        self.run_id = run_id or new_run_id()
        self.on_event = on_event
        self.on_notice = on_notice
        self.reconnect_for_s = reconnect_for_s
        self._first_of: dict[str, Event] = {}  # the first event of each type (hello, probe, result, error)
        self.end: Event | None = None
        self.stream: EventStream | None = None
        self.reconnects = 0
        self._held = 0  # the last seq delivered (or already held by the caller of attach)
        self._started = False  # this session issued `run` (so the run may not exist yet after a drop)
        # Lines the agent sent that protocol v1 refused: counted once each, even when a re-attach replays
        # them (keyed by the last event delivered before them and their place after it).
        self.refused = RefusedEvents()
        self.on_refused = on_refused  # called with the count so far (the app's live view shows it)
        self._refused_keys: set[tuple[int, int]] = set()
        self._bad_since_held = 0
        # cancel() and detach() come from other threads (a Ctrl-C, the app's Cancel).
        self._lock = threading.Lock()
        self._process: AgentProcess | None = None
        self.launched = False  # the host was asked to run it (it may be going on there)
        self._detached = False
        self._let_go = threading.Event()  # set by detach(): wakes a reconnect backoff
        self._cancel_reason: str | None = None  # cancel() was called
        self._cancel_sent = False
        self._cancel_thread: threading.Thread | None = None
        self.cancel_outcome: tuple[int | None, str] | None = None  # agent cancel's exit status and stderr

    @property
    def host(self) -> str:
        return self.transport.host

    @property
    def cancel_sent(self) -> bool:
        """``agent cancel`` went out (and did not fail to reach the host)."""
        return self._cancel_sent

    def run(self) -> dict[str, Any]:
        """Start the run, follow it to the end and return the Result; a failed run is a Result too.

        Raises AgentError when the agent dies without ending its stream,
        ProtocolViolation when the stream is malformed, and ConnectError when the
        host stays unreachable for ``reconnect_for_s`` (the run goes on there).
        """
        if self.spec is None:
            raise ValueError("RunSession.run needs a spec")
        self._started = True
        prepare = getattr(self.transport, "setup", None)
        if prepare is not None:
            prepare()  # connect and deploy (and the questions they may ask) before the run exists anywhere
        with self._lock:
            if self._detached:
                raise Detached(f"run {self.run_id} was not started on {self.transport.host}")
            self.launched = self._cancel_reason is None
        if not self.launched:
            return self.not_started_result()
        result = self._follow(self._start_run())
        return self._after_cancel(result)

    def attach(self, from_seq: int = 1) -> dict[str, Any]:
        """Follow a run started earlier (by this or another process) from ``from_seq`` to its end."""
        self._held = max(0, from_seq - 1)
        self.launched = True
        return self._after_cancel(self._follow(self._tapped(
            self.transport.start(["attach", self.run_id, "--from-seq", str(from_seq)]))))

    def cancel(self, reason: str = "cancelled") -> None:
        """Stop the run on its host (from any thread): its stream then ends ``cancelled`` and ``run()`` returns.

        ``agent cancel`` goes out as soon as the run exists on the host (its hello came), on a
        thread of its own; ``run()`` returns only once it has answered, i.e. once no process of
        the run is left.  A run not launched yet is not launched (its Result says cancelled); a
        host still being made for it (an EC2 launch) is given back at once.
        """
        with self._lock:
            if self._cancel_reason is None:
                self._cancel_reason = reason
            launched, ready = self.launched, self._held > 0
        if launched and not ready:
            self.transport.release()  # an EC2 instance still launching: stop the launch, terminate it
        self._cancel_if_due()

    def detach(self) -> None:
        """Stop following the run and leave it going on its host (from any thread): ``run()`` raises Detached."""
        with self._lock:
            self._detached = True
            process = self._process
        self._let_go.set()
        if process is not None:
            process.kill()  # the local follower or the SSH channel, never the run's supervisor

    # -------------------------------------------------------------- start, cancel
    def _start_run(self) -> AgentProcess:
        assert self.spec is not None
        request: dict[str, Any] = self.spec.to_dict()
        if self.placement is not None:
            request = {"spec": request, "node": self.placement.to_dict()}
        return self._tapped(self.transport.start(["run", "--run-id", self.run_id],
                                                 stdin=json.dumps(request).encode()))

    def _tapped(self, process: AgentProcess) -> AgentProcess:
        """Keep the process that follows the run now, so that detach() can stop following it."""
        with self._lock:
            self._process = process
            detached = self._detached
        if detached:
            process.kill()
        return process

    def not_started_result(self) -> dict[str, Any]:
        """The Result of a run cancelled (or let go) before it was launched on its host."""
        assert self.spec is not None
        result = failed_result(self.transport.host, self.spec.to_dict(), self.run_id,
                               NeuronBenchError(f"{self._cancel_reason or 'stopped'} before it started on "
                                                f"{self.transport.host}"))
        result["status"] = "cancelled"
        result["error"]["kind"] = "cancelled"
        return result

    def _cancel_if_due(self) -> None:
        """Send ``agent cancel`` once it is wanted and the run exists on its host, unless we stopped following."""
        with self._lock:
            send = (self._cancel_reason is not None and self._held > 0 and not self._cancel_sent
                    and not self._detached and self.end is None)
            if send:
                self._cancel_sent = True
        if not send:
            return

        def cancel() -> None:
            try:
                self.cancel_outcome = agent_cancel(self.transport, self.run_id)
            except ConnectError as exc:
                with self._lock:
                    self._cancel_sent = False  # sent again with the first event after a reconnect
                self._notice(f"could not cancel run {self.run_id} yet: {exc}; it is cancelled once the "
                             f"connection is back")
            except NeuronBenchError as exc:
                self._notice(f"could not cancel run {self.run_id}: {exc}")

        self._cancel_thread = threading.Thread(target=cancel, name=f"cancel-{self.transport.host}", daemon=True)
        self._cancel_thread.start()

    def _after_cancel(self, result: dict[str, Any]) -> dict[str, Any]:
        """Wait for a cancel in flight (it returns when no process of the run is left) and say how it went."""
        thread = self._cancel_thread
        if thread is None:
            return result
        thread.join(CANCEL_TIMEOUT_S + 5)
        if thread.is_alive():
            code, said = None, f"the cancel on {self.transport.host} did not answer within {CANCEL_TIMEOUT_S:g} s"
        elif self.cancel_outcome is None:
            return result  # it never reached the host; the run ended by itself
        else:
            code, stderr = self.cancel_outcome
            said = _stderr_sentence(stderr) if stderr.strip() else f"cancel exited with code {code}"
        if result.get("status") == "cancelled" and not (result.get("error") or {}).get("message"):
            message = f"{self._cancel_reason}: " + (f"no process of it is left on {self.transport.host}"
                                                     if code == 0 else said)
            result["error"] = {"kind": "cancelled", "message": message, "detail": ""}
        elif code not in (0, AGENT_EXIT_NO_SUCH_RUN):
            result.setdefault("warnings", []).append(f"cancelling on {self.transport.host}: {said}")
        return result

    def _deliver(self, event: Event) -> None:
        if event["type"] == "hello":
            if event.get("run_id") != self.run_id:
                raise with_refusals(ProtocolViolation(f"the agent on {self.transport.host} answered for run "
                                                      f"{event.get('run_id')!r}, not {self.run_id!r}"), self.refused)
            if self.spec is None and isinstance(event.get("spec"), dict):
                try:
                    self.spec = RunSpec.from_dict(event["spec"])
                except SpecError as exc:  # an agent of another version: follow the run all the same
                    self._notice(f"the run's spec from {self.transport.host} is not one this version reads "
                                 f"({clean(exc)}); following it without it")
        self._first_of.setdefault(event["type"], event)
        self._held, self._bad_since_held = event["seq"], 0
        if event["type"] == "end":
            self.end = event
        if self.on_event is not None:
            self.on_event(event)
        if self._cancel_reason is not None:
            self._cancel_if_due()  # the run exists on its host now (or it is back after a reconnect)

    def _follow(self, process: AgentProcess) -> dict[str, Any]:
        try:
            return self._follow_stream(process)
        except ProtocolViolation as exc:
            raise self._stopped_after(exc) from None

    def _stopped_after(self, error: ProtocolViolation) -> ProtocolViolation:
        """A stream we cannot follow ended a launched run's session: cancel the run, so nothing is left
        going on its host with nobody watching, and say how that went in the error's own sentence."""
        with self._lock:
            stop = self.launched and not self._detached and self.end is None
        if not stop:
            return error
        host = self.transport.host
        try:
            code, stderr = agent_cancel(self.transport, self.run_id)
        except NeuronBenchError as exc:
            code, stderr = None, str(exc)
        if code == 0:
            said = f"run {self.run_id} was cancelled there: no process of it is left on {host}"
        elif code == AGENT_EXIT_NO_SUCH_RUN:
            said = f"run {self.run_id} had already ended on {host}"
        else:
            reason = _stderr_sentence(stderr) if stderr.strip() else f"cancel exited with code {code}"
            said = (f"cancelling run {self.run_id} failed ({clean(reason)}): "
                    f"`neuronbench runs cancel {self.run_id} --host {host}` stops it")
        stopped = ProtocolViolation(f"{error}; {said}", detail=error.detail)
        stopped.__dict__.update({k: v for k, v in error.__dict__.items() if k != "detail"})  # events_refused
        return stopped

    def _follow_stream(self, process: AgentProcess) -> dict[str, Any]:
        lost_since: float | None = None
        while True:
            self.stream = self._stream(process)
            self.stream.pump()
            if self.end is not None:
                return self._result()
            if self._detached:
                raise Detached(f"run {self.run_id} goes on on {self.transport.host}")
            if self.stream.count:
                lost_since = None  # it moved on since the last drop: a fresh reconnect budget
            if process.connection_lost():
                lost_since = lost_since or time.monotonic()
                process = self._tapped(self._reconnect(lost_since))
            elif self._started and self._held == 0 and not self.stream.count and \
                    self.stream.exit_code == AGENT_EXIT_NO_SUCH_RUN and self.reconnects:
                # The connection dropped before `run` had created the run on the host: start it again.
                process = self._start_run()
            else:
                raise self.stream.died_error("the run ended", self.refused)

    def _stream(self, process: AgentProcess) -> EventStream:
        self._bad_since_held = 0
        return EventStream(process, self.transport.host, self._deliver, skip_through=self._held,
                           on_refused=self._refuse)

    def _refuse(self, reason: str) -> None:
        """A line the agent sent that protocol v1 refused: count it (once), say so, and go on."""
        key = (self._held, self._bad_since_held)
        self._bad_since_held += 1
        if key in self._refused_keys:
            return  # a re-attach replayed a line already counted
        self._refused_keys.add(key)
        self.refused.add(reason)
        sentence = self.refused.sentence(self.transport.host)
        if sentence:
            self._notice(sentence)
        if self.on_refused is not None:
            self.on_refused(self.refused.count)

    def _notice(self, text: str) -> None:
        if self.on_notice is not None:
            self.on_notice(text)

    def _reconnect(self, lost_since: float) -> AgentProcess:
        host = self.transport.host
        for attempt in itertools.count():
            delay = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
            if time.monotonic() - lost_since + delay > self.reconnect_for_s:
                raise ConnectError(
                    f"lost the connection to {host} and could not get it back within "
                    f"{self.reconnect_for_s / 60:g} min; the run goes on there: "
                    f"`neuronbench runs attach {self.run_id} --host {host}` picks it up")
            self._notice(f"connection to {host} lost after event {self._held}; "
                         f"reconnecting in {delay:g} s" + (f" (attempt {attempt + 1})" if attempt else ""))
            if self._let_go.wait(delay):
                raise Detached(f"run {self.run_id} goes on on {host}")
            try:
                process = self.transport.start(["attach", self.run_id, "--from-seq", str(self._held + 1)])
            except ConnectError as exc:
                self._notice(f"still no connection to {host}: {exc}")
                continue
            self.reconnects += 1
            self._notice(f"reconnected to {host}; resuming from event {self._held + 1}")
            return process
        raise AssertionError("unreachable")

    def _result(self) -> dict[str, Any]:
        result_event = self._first("result")
        error = self._first("error")
        if result_event is None:
            message = error["message"] if error else "the run ended without a result"
            if self.refused.count:
                message += f" ({self.refused.summary()})"
            raise with_refusals(AgentError(f"{self.transport.host}: {message}",
                                           detail=(error or {}).get("detail") or "",
                                           kind=(error or {}).get("kind", "internal")), self.refused)
        result = {k: v for k, v in result_event["result"].items() if k not in APP_BLOCKS}
        result["host"] = self.transport.host
        if self.refused.count:
            result["events_refused"] = self.refused.to_dict()
        if error and result.get("error"):
            result["error"]["detail"] = error.get("detail") or ""
        return result

    def _first(self, type_: str) -> Event | None:
        return self._first_of.get(type_)


def probe_host(transport: Transport, quick: bool = False, on_event: EventCallback | None = None) -> dict[str, Any]:
    """The host's environment (the agent's ``probe`` event)."""
    process = transport.start(["probe", *(["--quick"] if quick else [])])
    stream = EventStream(process, transport.host, on_event)
    stream.pump()
    probe = stream.first("probe")
    if probe is None:
        raise stream.died_error("describing the host")
    return probe["env"]
