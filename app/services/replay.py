"""Replaying a recorded event log as if an agent were streaming it (demos, screenshots, benchmarks).

``ReplayTransport`` is a Transport whose agent is a recorded ``events.jsonl``
(what ``neuronbench run --events`` writes, or a run directory's log): the real
``RunSession``/``EventStream`` read it line by line, validate it against protocol
v1 and call back exactly as for a live run.  Lines are paced so that a UI sees
them arrive over time; ``seq`` and ``t`` are rewritten so that a log can be
looped for as long as a benchmark needs.
"""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from app.services.transport import AgentProcess, Transport
from remote_agent.protocol import encode

Event = dict[str, Any]


def read_events(path: str | Path) -> list[Event]:
    """The events of a JSON Lines log, in order (no validation: the session validates on replay)."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


class ReplayProcess(AgentProcess):
    """Streams events from an iterable, renumbered from seq 1 and stamped with the replay's clock.

    ``pace(event)`` says how long to wait before each event (seconds) and
    ``clock(event)`` what its ``t`` is (default: now); ``kill()`` ends the
    stream at once, as a dropped connection would.
    """

    def __init__(self, events: Iterable[Event], pace: Callable[[Event], float] = lambda _e: 0.0,
                 clock: Callable[[Event], float] | None = None, run_id: str | None = None) -> None:
        self._events = events
        self._run_id = run_id
        self._pace = pace
        self._clock = clock or (lambda _e: time.time())
        self._stop = threading.Event()
        self._done = threading.Event()

    def lines(self) -> Iterator[bytes]:
        seq = 0
        try:
            for event in self._events:
                delay = self._pace(event)
                if delay > 0 and self._stop.wait(delay):
                    return
                if self._stop.is_set():
                    return
                seq += 1
                replayed = dict(event, seq=seq, t=self._clock(event))
                if self._run_id and event.get("type") == "hello":
                    replayed["run_id"] = self._run_id  # the session checks it answers for its own run
                elif self._run_id and event.get("type") == "result":
                    replayed["result"] = dict(event["result"], run_id=self._run_id)
                yield encode(replayed)
        finally:
            self._done.set()

    def wait(self, timeout: float | None = None) -> int | None:
        return 0 if self._done.wait(timeout) else None

    def stderr_text(self) -> str:
        return ""

    def kill(self) -> None:
        self._stop.set()


class ReplayTransport(Transport):
    """A host whose ``run`` replays ``make_events()``; other agent commands (cancel) stop the replay."""

    def __init__(self, make_events: Callable[[], Iterable[Event]], host: str = "replay",
                 pace: Callable[[Event], float] = lambda _e: 0.0,
                 clock: Callable[[], Callable[[Event], float]] | None = None) -> None:
        self.host = host
        self._make_events = make_events
        self._pace = pace
        self._clock = clock
        self._running: list[ReplayProcess] = []

    def start(self, args: Sequence[str], stdin: bytes | None = None) -> AgentProcess:
        if args and args[0] == "cancel":
            for process in self._running:
                process.kill()
            return ReplayProcess([])
        # `run --run-id ID` or `attach ID`; `probe --quick` names no run (an option is no run id).
        run_id = args[args.index("--run-id") + 1] if "--run-id" in args else (
            args[1] if len(args) > 1 and not args[1].startswith("-") else None)
        process = ReplayProcess(self._make_events(), self._pace, self._clock() if self._clock else None, run_id)
        self._running.append(process)
        return process

    def describe(self) -> str:
        return f"{self.host} (a recorded event log)"


def run_body(events: Sequence[Event]) -> tuple[Event, list[Event], list[Event]]:
    """Split a recorded run into (hello, the events in between, the closing result/end events)."""
    if not events or events[0].get("type") != "hello":
        raise ValueError("a recorded run starts with its hello event")
    closing = [e for e in events if e.get("type") in ("result", "end")]
    middle = [e for e in events[1:] if e.get("type") not in ("result", "end")]
    return events[0], middle, closing


def live_stream(events: Sequence[Event], samples: Sequence[Event] = (), every: int = 10,
                loops: int | None = 1) -> Iterator[Event]:
    """A recorded run as a live stream: hello, the body ``loops`` times (None: forever), result, end.

    A telemetry ``sample`` (cycling through ``samples``) follows every ``every`` body events,
    e.g. 10 events at 10 events/s plus one sample: 1 Hz telemetry.
    """
    hello, middle, closing = run_body(events)
    yield hello
    count, sample_index, loop = 0, 0, 0
    while loops is None or loop < loops:
        for event in middle:
            yield event
            count += 1
            if samples and count % every == 0:
                yield samples[sample_index % len(samples)]
                sample_index += 1
        loop += 1
    yield from closing


def virtual_clock(events_per_s: float = 10.0, start: float | None = None) -> Callable[[Event], float]:
    """Stamps events as if they came at ``events_per_s`` (samples take no time): replays fast, charts look live."""
    now = [time.time() if start is None else start]

    def clock(event: Event) -> float:
        if event.get("type") not in ("sample", "hello"):
            now[0] += 1.0 / events_per_s
        return now[0]

    return clock
