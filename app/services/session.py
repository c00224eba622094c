"""Running the agent on one host and turning its event stream into a Result.

A ``RunSession`` starts ``agent run`` through a Transport, checks every line
against protocol v1, hands each event to the caller's callback (on the calling
thread: the CLI prints progress, the GUI's bridge turns it into a queued
signal), and returns the Result JSON with the host filled in.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from app.core.errors import AgentError, ProtocolViolation
from app.services.transport import AgentProcess, Transport
from remote_agent.protocol import ProtocolError, RunSpec, SeqTracker, decode, new_run_id

Event = dict[str, Any]
EventCallback = Callable[[Event], None]


def _stderr_sentence(stderr: str) -> str:
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "it printed nothing on stderr"


class EventStream:
    """Reads one agent command's stdout as validated events."""

    def __init__(self, process: AgentProcess, host: str, on_event: EventCallback | None = None) -> None:
        self.process = process
        self.host = host
        self.on_event = on_event
        # Not every event: a run streams telemetry for hours, and the caller's callback keeps what it
        # needs (the CLI's --events file, the GUI's ring buffers).  Only the first of each type stays.
        self.count = 0
        self._first: dict[str, Event] = {}
        self.end: Event | None = None
        self._tracker = SeqTracker()

    def pump(self) -> None:
        """Consume the stream to its end; raise ProtocolViolation on a malformed stream."""
        for line in self.process.lines():
            if not line.strip():
                continue
            try:
                event = decode(line)
                self._tracker.check(event)
            except ProtocolError as exc:
                self.process.kill()
                raise ProtocolViolation(f"the agent on {self.host} broke protocol v1: {exc}",
                                        detail=self.process.stderr_text()) from None
            self.count += 1
            self._first.setdefault(event["type"], event)
            if self.on_event is not None:
                self.on_event(event)
            if event["type"] == "end":
                self.end = event
        self.process.wait(timeout=10)

    @property
    def last_seq(self) -> int:
        """The seq of the last event received (where an attach would resume)."""
        return self._tracker.last_seq

    def first(self, type_: str) -> Event | None:
        return self._first.get(type_)

    def died_error(self, doing: str) -> AgentError:
        stderr = self.process.stderr_text()
        return AgentError(f"the agent on {self.host} stopped before {doing}: {_stderr_sentence(stderr)}",
                          detail=stderr, kind="runtime")


class RunSession:
    """One benchmark run on one host."""

    def __init__(self, transport: Transport, spec: RunSpec, run_id: str | None = None,
                 on_event: EventCallback | None = None) -> None:
        self.transport = transport
        self.spec = spec
        self.run_id = run_id or new_run_id()
        self.on_event = on_event
        self.stream: EventStream | None = None

    def run(self) -> dict[str, Any]:
        """Run to the end and return the Result; a failed run is a Result with status "failed".

        Raises AgentError when the agent dies without ending its stream and
        ProtocolViolation when the stream is malformed.
        """
        process = self.transport.start(["run", "--run-id", self.run_id],
                                       stdin=json.dumps(self.spec.to_dict()).encode())
        self.stream = EventStream(process, self.transport.host, self.on_event)
        self.stream.pump()
        if self.stream.end is None:
            raise self.stream.died_error("the run ended")
        result_event = self.stream.first("result")
        if result_event is None:
            error = self.stream.first("error")
            message = error["message"] if error else "the run ended without a result"
            raise AgentError(f"{self.transport.host}: {message}", detail=(error or {}).get("detail", ""),
                             kind=(error or {}).get("kind", "internal"))
        result = dict(result_event["result"])
        result["host"] = self.transport.host
        error = self.stream.first("error")
        if error and result.get("error"):
            result["error"]["detail"] = error.get("detail", "")
        return result


def probe_host(transport: Transport, quick: bool = False, on_event: EventCallback | None = None) -> dict[str, Any]:
    """The host's environment (the agent's ``probe`` event)."""
    process = transport.start(["probe", *(["--quick"] if quick else [])])
    stream = EventStream(process, transport.host, on_event)
    stream.pump()
    probe = stream.first("probe")
    if probe is None:
        raise stream.died_error("describing the host")
    return probe["env"]
