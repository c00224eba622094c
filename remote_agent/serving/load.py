"""The load: a closed-loop level (C requests in flight) and an open-loop Poisson level, each stopped by rule.

A level ends when both ``min_requests`` have completed and ``duration_s`` has passed (as inference does),
earlier once ``--target-ci`` is met (the median E2E's 95% interval by batch means, remote_agent.stopping),
and at once when the error rate says the server is failing (``error_stop``).  Arrival times of a Poisson
level come from a seeded generator: the same seed and rate give the same schedule on every host.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple

from remote_agent.serving.sse import Outcome
from remote_agent.stopping import ThroughputStop

Send = Callable[[int], Outcome]
# A level stops on errors once this many requests ended and more than this share of them failed.
ERROR_FLOOR = 4
MAX_ERROR_SHARE = 0.5
# Open loop: at most this many requests in flight at once (a server that falls this far behind is saturated).
MAX_IN_FLIGHT = 512


@dataclass
class LevelRule:
    min_requests: int
    duration_s: float
    target_ci: Optional[float] = None
    max_requests: Optional[int] = None  # a hard cap (a Poisson level's count)


class Level:
    """The outcomes of one level as they complete, and why it stopped."""

    def __init__(self, rule: LevelRule, cancelled: threading.Event, clock: Callable[[], float]) -> None:
        self.rule, self.cancelled, self.clock = rule, cancelled, clock
        self.outcomes: List[Outcome] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.stopped_by: Optional[str] = None
        self.target = ThroughputStop(rule.target_ci, rule.min_requests)
        self.begin = clock()

    def add(self, outcome: Outcome) -> None:
        with self.lock:
            self.outcomes.append(outcome)
            timeline = outcome.timeline
            known = False
            if timeline.ok:
                known = self.target.add(timeline.finished - timeline.start)
            errors = sum(1 for o in self.outcomes if not o.timeline.ok)
            done = len(self.outcomes)
            if self.stopped_by is None:
                if self.cancelled.is_set():
                    self.stopped_by = "cancelled"
                elif done >= ERROR_FLOOR and errors > MAX_ERROR_SHARE * done:
                    self.stopped_by = "errors"
                elif known:
                    self.stopped_by = "target_ci"
                elif self.rule.max_requests is not None and done >= self.rule.max_requests:
                    self.stopped_by = "count"
                elif done - errors >= self.rule.min_requests and self.clock() - self.begin >= self.rule.duration_s:
                    self.stopped_by = "duration" if self.rule.max_requests is None else "count"
            if self.stopped_by is not None:
                self.stop.set()

    def first_error(self) -> Optional[str]:
        for outcome in self.outcomes:
            if outcome.timeline.error:
                return outcome.timeline.error
        return None


def closed_loop(send: Send, concurrency: int, rule: LevelRule, cancelled: threading.Event,
                clock: Callable[[], float] = time.perf_counter, first_index: int = 0) -> Level:
    """``concurrency`` clients, each sending its next request when the last one ends, until the rule stops."""
    level = Level(rule, cancelled, clock)
    counter = [first_index]
    counter_lock = threading.Lock()

    def client() -> None:
        while not level.stop.is_set() and not cancelled.is_set():
            with counter_lock:
                index = counter[0]
                counter[0] += 1
            level.add(send(index))

    threads = [threading.Thread(target=client, name="serve-client-%d" % i, daemon=True) for i in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if level.stopped_by is None:
        level.stopped_by = "cancelled"
    return level


def poisson_schedule(rate: float, count: int, seed: int) -> List[float]:
    """Send times (s from the start) of ``count`` requests arriving as a Poisson process of ``rate`` per second."""
    rng = random.Random("%s/%r" % (seed, float(rate)))
    at, times = 0.0, []
    for _ in range(count):
        at += rng.expovariate(rate)
        times.append(at)
    return times


def open_loop(send: Send, rate: float, rule: LevelRule, seed: int, cancelled: threading.Event,
              clock: Callable[[], float] = time.perf_counter, first_index: int = 0) -> Tuple[Level, int]:
    """Requests sent at seeded Poisson times whatever the server's pace; (the level, the most in flight)."""
    count = rule.max_requests or max(rule.min_requests, int(rate * rule.duration_s) + 1)
    schedule = poisson_schedule(rate, count, seed)
    level = Level(LevelRule(rule.min_requests, rule.duration_s, rule.target_ci, count), cancelled, clock)
    slots = threading.BoundedSemaphore(MAX_IN_FLIGHT)
    threads: List[threading.Thread] = []
    in_flight = [0, 0]  # now, most
    lock = threading.Lock()

    def one(index: int) -> None:
        try:
            level.add(send(index))
        finally:
            with lock:
                in_flight[0] -= 1
            slots.release()

    begin = clock()
    for i, offset in enumerate(schedule):
        wait = begin + offset - clock()
        if wait > 0 and level.stop.wait(wait):
            break
        if level.stop.is_set() or cancelled.is_set():
            break
        slots.acquire()
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight[1], in_flight[0])
        thread = threading.Thread(target=one, args=(first_index + i,), name="serve-request", daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()
    if level.stopped_by is None:
        level.stopped_by = "cancelled" if cancelled.is_set() else "count"
    return level, in_flight[1]


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
