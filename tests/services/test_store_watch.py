"""The history's watch on the run store: it sees what the history shows change, and nothing else.

A real SQLite store written through ``RunStore`` (another connection, as a CLI process
or the app's recorder writes it); the watch keeps its own connection, as the app does.
"""
from __future__ import annotations

import pytest

from app.services.store import RunStore
from app.services.store_watch import StoreWatch, read_signature
from tests.helpers import TINY_MODEL

SPEC = {"workload": "train", "model": TINY_MODEL, "batch_sizes": [8], "steps": 10}


def event(seq: int, type_: str, **fields) -> dict:
    return {"v": 1, "seq": seq, "t": 1_800_000_000.0 + seq, "type": type_, **fields}


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs.sqlite3") as store:
        yield store


@pytest.fixture
def watch(store):
    watch = StoreWatch(store.path)
    watch.baseline = read_signature(store.path)
    yield watch
    watch.close()


def seen(watch: StoreWatch) -> bool:
    """One look; what the history would do: read again (a new baseline) when it changed."""
    changed = watch.changed()
    if changed:
        watch.baseline = read_signature(watch.path)
    return changed


def test_a_run_recorded_elsewhere_is_seen_at_its_start_probe_and_end_but_not_at_each_event(store, watch):
    assert not seen(watch)
    store.begin_run("20261124-100000-aaaaaa", "local", SPEC)
    assert seen(watch)  # a new row: "running"
    store.append_event("20261124-100000-aaaaaa", event(1, "hello", agent_version="1", protocol_version=1, pid=1,
                                                       python="3.11", run_id="20261124-100000-aaaaaa"))
    assert not seen(watch)
    store.append_event("20261124-100000-aaaaaa", event(2, "probe", env={"instance_type": "trn1.2xlarge"}))
    assert seen(watch)  # its instance type is known now
    for seq in range(3, 40):  # a live run's steps: the history has nothing new to show
        store.append_event("20261124-100000-aaaaaa", event(seq, "step", i=seq, dt_s=0.01, samples=8,
                                                           compiled=False))
        assert not seen(watch)
    store.finish_run("20261124-100000-aaaaaa", {"status": "ok", "run_id": "20261124-100000-aaaaaa"})
    assert seen(watch)  # "ok", with its Result
    assert not seen(watch)


def test_a_declared_type_and_a_deleted_run_are_seen(store, watch):
    store.begin_run("20261124-100000-bbbbbb", "local", SPEC)
    store.finish_run("20261124-100000-bbbbbb", {"status": "failed", "run_id": "20261124-100000-bbbbbb"})
    assert seen(watch)
    store.declare_instance("20261124-100000-bbbbbb", {"instance_type": "trn1.2xlarge"}, None)
    assert seen(watch)  # priced after the fact: its instance type and cost change in the table
    store.delete_run("20261124-100000-bbbbbb")
    assert seen(watch)


def test_a_watch_on_a_store_not_made_yet_sees_nothing_and_creates_nothing(tmp_path):
    watch = StoreWatch(tmp_path / "none" / "runs.sqlite3")
    assert not watch.changed()
    assert not (tmp_path / "none").exists()
