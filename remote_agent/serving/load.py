"""The load: a closed-loop level (C requests in flight) and an open-loop Poisson level, each stopped by rule.

Both run on the client's one event loop (``remote_agent.serving.client``), in the calling thread; requests are
made ahead of their send (the next one is ready while the server works on the last), so the loop only writes.

- A level ends when both ``min_requests`` have completed and ``duration_s`` has passed (as inference does),
  earlier once ``--target-ci`` is met (the median E2E's 95% interval by batch means, remote_agent.stopping),
  and at once when the error rate says the server is failing (``errors``), the run is cancelled, or ``abort``
  (the serve workload's watch on its server) gives a reason: then the requests in flight are given up.
- Every request carries its scheduled time.  Closed loop: when its client was free (the last answer's end);
  open loop: the seeded Poisson arrival.  A send later than that (a busy client, the in-flight cap) is recorded
  as the send lag, never hidden: the open loop does not silently turn closed.
- The client's own CPU time over the level (the loop's thread: ``time.thread_time``) is kept with it.

Arrival times of a Poisson level come from a seeded generator: the same seed and rate give the same schedule on
every host.
"""
from __future__ import annotations

import asyncio
import collections
import itertools
import random
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Deque, List, Optional, Tuple

from remote_agent.serving.client import Client
from remote_agent.serving.sse import Outcome, Request
from remote_agent.stopping import ThroughputStop

Make = Callable[[int], Request]  # request index -> the request, made ahead of its send
Abort = Callable[[], Optional[str]]  # None, or why the level must end now (the server exited)
# A level stops on errors once this many requests ended and more than this share of them failed.
ERROR_FLOOR = 4
MAX_ERROR_SHARE = 0.5
# Open loop: at most this many requests in flight at once (a server that falls this far behind is saturated);
# a send held back by it is late, and its lag is recorded.
MAX_IN_FLIGHT = 512
AHEAD = 64  # open loop: requests made ahead of the schedule
WATCH_S = 0.1  # how often the level looks at the cancel flag and ``abort``


@dataclass
class LevelRule:
    min_requests: int
    duration_s: float
    target_ci: Optional[float] = None
    max_requests: Optional[int] = None  # a hard cap (a Poisson level's count, a warm-up round)


class Level:
    """The outcomes of one level as they complete, and why it stopped."""

    def __init__(self, rule: LevelRule, cancelled: threading.Event, clock: Callable[[], float] = time.perf_counter
                 ) -> None:
        self.rule, self.cancelled, self.clock = rule, cancelled, clock
        self.outcomes: List[Outcome] = []
        self.errors = 0
        self.stop = False
        self.stopped_by: Optional[str] = None
        self.abort_reason: Optional[str] = None
        self.target = ThroughputStop(rule.target_ci, rule.min_requests)
        self.begin = clock()
        self.wall_s = 0.0
        self.cpu_s: Optional[float] = None  # the client's CPU seconds over the level
        self.most_in_flight = 0
        self.next_index = 0  # the first request index the next level may use

    def add(self, outcome: Outcome) -> None:
        if outcome.aborted:
            return  # given up by the client (cancel, a dead server): no figure
        self.outcomes.append(outcome)
        timeline = outcome.timeline
        known = False
        if timeline.ok:
            known = self.target.add(timeline.finished - timeline.start)
        else:
            self.errors += 1
        done = len(self.outcomes)
        if self.stopped_by is None:
            if self.cancelled.is_set():
                self.stopped_by = "cancelled"
            elif done >= ERROR_FLOOR and self.errors > MAX_ERROR_SHARE * done:
                self.stopped_by = "errors"
            elif known:
                self.stopped_by = "target_ci"
            elif self.rule.max_requests is not None and done >= self.rule.max_requests:
                self.stopped_by = "count"
            elif done - self.errors >= self.rule.min_requests and self.clock() - self.begin >= self.rule.duration_s:
                self.stopped_by = "duration" if self.rule.max_requests is None else "count"
        if self.stopped_by is not None:
            self.stop = True

    def halt(self, why: str, reason: Optional[str] = None) -> None:
        if self.stopped_by is None or why == "server_exited":
            self.stopped_by = why
        self.abort_reason = reason or self.abort_reason
        self.stop = True

    def first_error(self) -> Optional[str]:
        for outcome in self.outcomes:
            if outcome.timeline.error:
                return outcome.timeline.error
        return None


def _measured(client: Client, level: Level, body: Any, abort: Optional[Abort]) -> Level:
    """Run ``body`` (the level's coroutine) with its watch, timing the client's CPU and the wall."""
    async def watch() -> None:
        while not level.stop:
            await asyncio.sleep(WATCH_S)
            if level.cancelled.is_set():
                level.halt("cancelled")
                client.abort()
            elif abort is not None:
                reason = abort()
                if reason:
                    level.halt("server_exited", reason)
                    client.abort()

    async def both() -> None:
        watcher = asyncio.ensure_future(watch())
        try:
            await body
        finally:
            watcher.cancel()
            try:
                await watcher
            except asyncio.CancelledError:
                pass

    cpu, begin = time.thread_time(), time.perf_counter()
    level.begin = begin
    client.run(both())
    level.cpu_s = time.thread_time() - cpu
    level.wall_s = time.perf_counter() - begin
    if level.stopped_by is None:
        level.stopped_by = "cancelled" if level.cancelled.is_set() else "count"
    return level


def closed_loop(client: Client, make: Make, concurrency: int, rule: LevelRule, cancelled: threading.Event,
                first_index: int = 0, abort: Optional[Abort] = None) -> Level:
    """``concurrency`` clients, each sending its next request the moment its last one ends, until the rule stops."""
    level = Level(rule, cancelled)
    counter = itertools.count(first_index)

    async def one_client() -> None:
        ready = time.perf_counter()
        upcoming = make(next(counter))
        while not level.stop:
            pending = client.start(upcoming, ready)
            upcoming = make(next(counter))  # made while the server works
            outcome = await pending
            ready = outcome.ended if outcome.ended is not None else time.perf_counter()
            level.add(outcome)

    async def clients() -> None:
        await asyncio.gather(*[one_client() for _ in range(concurrency)])

    level.most_in_flight = concurrency
    _measured(client, level, clients(), abort)
    level.next_index = next(counter)
    return level


def poisson_schedule(rate: float, count: int, seed: int) -> List[float]:
    """Send times (s from the start) of ``count`` requests arriving as a Poisson process of ``rate`` per second."""
    rng = random.Random("%s/%r" % (seed, float(rate)))
    at, times = 0.0, []
    for _ in range(count):
        at += rng.expovariate(rate)
        times.append(at)
    return times


def open_loop(client: Client, make: Make, rate: float, rule: LevelRule, seed: int, cancelled: threading.Event,
              first_index: int = 0, abort: Optional[Abort] = None) -> Tuple[Level, int]:
    """Requests sent at seeded Poisson times whatever the server's pace; (the level, the most in flight)."""
    count = rule.max_requests or max(rule.min_requests, int(rate * rule.duration_s) + 1)
    schedule = poisson_schedule(rate, count, seed)
    level = Level(LevelRule(rule.min_requests, rule.duration_s, rule.target_ci, count), cancelled)
    made: Deque[Request] = collections.deque(make(first_index + i) for i in range(min(AHEAD, count)))
    state = {"in_flight": 0, "made": len(made)}
    freed: List["asyncio.Future[None]"] = []  # the sender, waiting for the cap to let one more out

    def ended(future: "asyncio.Future[Outcome]") -> None:
        state["in_flight"] -= 1
        level.add(future.result())
        if freed and not freed[0].done():
            freed[0].set_result(None)

    async def sender() -> None:
        pending: List["asyncio.Future[Outcome]"] = []
        begin = time.perf_counter()
        for offset in schedule:
            due = begin + offset
            while not level.stop:
                wait = due - time.perf_counter()
                if wait <= 0:
                    break
                await asyncio.sleep(min(wait, WATCH_S))
            while not level.stop and state["in_flight"] >= MAX_IN_FLIGHT:
                freed[:] = [client.loop.create_future()]
                await freed[0]
            if level.stop:
                break
            future = client.start(made.popleft(), due)
            state["in_flight"] += 1
            level.most_in_flight = max(level.most_in_flight, state["in_flight"])
            future.add_done_callback(ended)
            pending.append(future)
            if state["made"] < count:
                made.append(make(first_index + state["made"]))
                state["made"] += 1
        if pending:
            await asyncio.wait(pending)

    _measured(client, level, sender(), abort)
    level.next_index = first_index + state["made"]
    return level, level.most_in_flight


def next_rates(tried: List[Tuple[float, bool]], ceiling: float, probes: int, floor: float = 0.0) -> Optional[float]:
    """The rate search's next rate, or None when done: the ceiling (the sweep's highest requests/s) first, then
    bisection between the highest rate known to meet the SLO (``floor``: the requests/s of the busiest
    concurrency level that met it) and the lowest above it that did not; with no floor, thirds of the ceiling."""
    if len(tried) >= probes or ceiling <= 0:
        return None
    met = [rate for rate, ok in tried if ok] + ([floor] if floor > 0 else [])
    missed = [rate for rate, ok in tried if not ok]
    if not tried:
        return ceiling
    low = max(met) if met else 0.0
    above = [rate for rate in missed if rate > low]
    high = min(above) if above else None
    if high is None:
        return None  # the highest rate tried met it: the server is not the limit below the ceiling
    if not met and high / 3.0 < min(missed):
        candidate = high / 3.0
        return candidate if candidate > 0 else None
    return (low + high) / 2.0
