"""Pricing a stored run after the fact: ``neuronbench runs set RUN --instance-type T`` and History's dialog.

The declaration is checked against the price book (app.core.declared_type),
kept in the run's ``declared_json`` (source "declared after the run", dated),
and the run's Result gets a new ``cost`` block from the current price book.
Compare and reports read the declaration from the store, so they price the run
the same way from then on.
"""
from __future__ import annotations

import os

from app.core.cost import TYPE_FROM_AFTER_RUN, apply_cost
from app.core.declared_type import checked_declaration, declaration
from app.core.errors import BadSpecError
from app.core.pricebook import PriceBook
from app.core.runrecord import StoredRun
from app.services.store import RunStore


def probed_type(run: StoredRun) -> str | None:
    """The instance type the host reported itself (EC2 metadata, neuron-ls), if it did."""
    env = run.env or (run.result or {}).get("env") or {}
    return env.get("instance_type") or None


def _check_run(store: RunStore, run: StoredRun, itype: str) -> None:
    reported = probed_type(run)
    if reported and reported != itype:
        raise BadSpecError(f"run {run.run_id} ran on a host that reported its own instance type, {reported}, and "
                           f"is priced as that; to change what {reported} costs, use `neuronbench prices set "
                           f"{reported} USD_PER_HOUR`")
    if store.is_recording(run.run_id):
        raise BadSpecError(f"run {run.run_id} is being recorded now: declare its instance type once it has ended")


def declare_instance_type(store: RunStore, book: PriceBook, ref: str, instance_type: str,
                          region: str | None = None, at: float | None = None) -> StoredRun:
    """Declare the instance type (and region) ``ref`` ran on, re-price it, store both; returns the run as stored.

    Raises BadSpecError for a type or region the price book cannot price, or a run
    whose host reported a different type itself; StoreError for an unknown run or
    one being recorded now.
    """
    run = store.load(ref)
    itype, region = checked_declaration(book, instance_type, region)
    _check_run(store, run, itype)
    result = None
    if run.result:
        result = dict(run.result)
        priced = dict(result, env=result.get("env") or run.env, warnings=list(result.get("warnings") or []))
        apply_cost(priced, book, itype, region, declared_from=TYPE_FROM_AFTER_RUN, wall=(run.started_at, run.ended_at))
        result["cost"] = priced["cost"]
    store.declare_instance(run.run_id, declaration(itype, region, at), result)
    stored = store.get_run(run.run_id)
    assert stored is not None
    return stored


def declare_in_store(db_path: str | os.PathLike[str], book: PriceBook, run_ids: list[str], instance_type: str,
                     region: str | None = None) -> list[StoredRun]:
    """One call for a worker thread: open the store, declare the type for each run, close it.

    Every run is checked before any is changed: one refusal leaves them all as they were.
    """
    with RunStore(db_path) as store:
        itype, _ = checked_declaration(book, instance_type, region)
        for run_id in run_ids:
            _check_run(store, store.load(run_id), itype)
        return [declare_instance_type(store, book, run_id, instance_type, region) for run_id in run_ids]
