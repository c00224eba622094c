"""Recording one run into the store: RunSession's ``on_event`` callback in, store writes out.

    recorder = RunRecorder.start(store, book, host, spec, run_id)
    session = RunSession(transport, spec, run_id=run_id, on_event=recorder)   # or chain it
    result = recorder.finish(session.run())                                  # cost filled, stored

A store failure (disk full, a locked file past its timeout) must not kill a
benchmark that may have compiled for half an hour: the recorder reports it once
through ``on_error`` and the run goes on (the host keeps its own events.jsonl).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from app.core.cost import TYPE_FROM_PROFILE, apply_cost
from app.core.errors import ConnectError, NeuronBenchError
from app.core.mfu import apply_mfu
from app.core.pricebook import PriceBook
from app.core.results import failed_result
from app.paths import AppPaths
from app.services.peaks import load_peak_table
from app.services.pricing import load_pricebook
from app.services.session import RunSession
from app.services.store import RunStore
from app.services.transport import Transport
from remote_agent.protocol import RunSpec


class RunRecorder:
    def __init__(self, store: RunStore, book: PriceBook | None, host: str, spec: RunSpec | dict[str, Any],
                 run_id: str, declared_type: str | None = None, declared_region: str | None = None,
                 on_error: Callable[[str], None] | None = None, declared_from: str = TYPE_FROM_PROFILE) -> None:
        self.store = store
        self.book = book
        self.host = host
        self.spec = spec.to_dict() if isinstance(spec, RunSpec) else dict(spec)
        self.run_id = run_id
        self.declared_type = declared_type or None
        self.declared_region = declared_region or None
        self.declared_from = declared_from  # the profile's type, or one declared after the run (re-attach)
        self.on_error = on_error
        self.failed: str | None = None
        self.env: dict[str, Any] | None = None
        self.started = False  # the host holds the run (its hello came, or it is a stored run re-attached)
        # The run's wall time, first event to last (its ``end``), on the host's clock: what cost.benchmark bills.
        self.first_t: float | None = None
        self.last_t: float | None = None

    @classmethod
    def start(cls, store: RunStore, book: PriceBook | None, host: str, spec: RunSpec | dict[str, Any],
              run_id: str, **kwargs: Any) -> RunRecorder:
        """Create the run's row (status ``running``) and return the recorder."""
        recorder = cls(store, book, host, spec, run_id, **kwargs)
        declared = {"instance_type": recorder.declared_type, "region": recorder.declared_region} \
            if recorder.declared_type or recorder.declared_region else None
        store.begin_run(run_id, host, recorder.spec, declared)
        return recorder

    @classmethod
    def resume(cls, store: RunStore, book: PriceBook | None, run_id: str,
               on_error: Callable[[str], None] | None = None) -> tuple[RunRecorder, int]:
        """Take over recording a stored run (re-attach); returns the recorder and the last stored seq."""
        run = store.load(run_id)
        declared = run.declared or {}
        recorder = cls(store, book, run.host, run.spec or {}, run.run_id, declared.get("instance_type"),
                       declared.get("region"), on_error, declared.get("source") or TYPE_FROM_PROFILE)
        recorder.started = True
        recorder.first_t = run.started_at
        return recorder, store.resume_run(run.run_id)

    def _report(self, exc: Exception) -> None:
        if self.failed is None:
            self.failed = f"the run store {self.store.path} stopped recording run {self.run_id}: {exc}"
            if self.on_error:
                self.on_error(self.failed)

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get("type") == "hello":
            self.started = True
        elif event.get("type") == "probe":
            self.env = event.get("env")
        t = event.get("t")
        if isinstance(t, (int, float)):
            self.first_t = t if self.first_t is None else min(self.first_t, t)
            self.last_t = t if self.last_t is None else max(self.last_t, t)
        if self.failed is not None:
            return
        try:
            self.store.append_event(self.run_id, event)
        except (sqlite3.Error, OSError) as exc:
            self._report(exc)

    def finish(self, result: dict[str, Any]) -> dict[str, Any]:
        """Price the Result (its ``cost`` block), store it with its status, and return it.

        A run whose host became unreachable after it started is not failed: it
        goes on over there, so it is stored as unfinished, to be re-attached.
        """
        if self.started and result.get("status") == "failed" and \
                (result.get("error") or {}).get("kind") == ConnectError.__name__:
            self.abandon()
            return result
        if not result.get("env") and self.env:
            result["env"] = self.env  # a run that died still says what it ran on
        if self.book is not None:
            apply_cost(result, self.book, self.declared_type, self.declared_region, declared_from=self.declared_from,
                       wall=(self.first_t, self.last_t))
        with_mfu(result)
        try:
            self.store.finish_run(self.run_id, result)
        except (sqlite3.Error, OSError) as exc:
            self._report(exc)
        return result


    def fail(self, error: Exception) -> dict[str, Any]:
        """Store the run as failed with ``error``'s sentence (no Result came); returns that failed Result."""
        return self.finish(failed_result(self.host, self.spec, self.run_id, error))

    def abandon(self) -> None:
        """Stop recording a run that goes on without us (the app is closing): it reads as unfinished."""
        try:
            self.store.abandon_run(self.run_id)
        except (sqlite3.Error, OSError) as exc:
            self._report(exc)


def with_mfu(result: dict[str, Any]) -> dict[str, Any]:
    """The Result with its MFU filled in from the shipped peak table (left as it is if the table is damaged)."""
    try:
        return apply_mfu(result, load_peak_table())
    except NeuronBenchError:
        return result


def open_recording(paths: AppPaths, warn: Callable[[str], None]) -> tuple[RunStore, PriceBook | None]:
    """The run store and the price book for recording runs.

    A damaged price file costs the runs their ``cost`` block (filled in later by
    ``compare``/``report``), not the benchmark: it is reported through ``warn``.
    """
    store = RunStore(paths.runs_db)
    try:
        book: PriceBook | None = load_pricebook(paths)
    except NeuronBenchError as exc:
        warn(f"runs are recorded without prices: {exc}")
        book = None
    return store, book


def run_recorded(transport: Transport, spec: RunSpec, store: RunStore, book: PriceBook | None,
                 declared_type: str | None = None, declared_region: str | None = None,
                 on_event: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run ``spec`` once on ``transport``'s host, every event stored as it arrives; returns the priced Result.

    What ``neuronbench run`` does for one host and one repeat, for callers without
    a progress printer (the screenshots, fixtures of stored runs).  A run that fails
    is stored as failed, with the engine's sentence.
    """
    session = RunSession(transport, spec)
    recorder = RunRecorder.start(store, book, transport.host, spec, session.run_id, declared_type=declared_type,
                                 declared_region=declared_region)

    def record(event: dict[str, Any]) -> None:
        recorder(event)
        if on_event is not None:
            on_event(event)

    session.on_event = record
    try:
        return recorder.finish(session.run())
    except NeuronBenchError as exc:
        return recorder.fail(exc)
