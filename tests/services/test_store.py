"""The run store: migrations, crash safety, concurrent writers, unfinished runs, telemetry."""
from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

from app.core.errors import BadSpecError
from app.core.telemetry import downsample
from app.services import store as store_module
from app.services.recorder import RunRecorder
from app.services.store import SCHEMA_VERSION, RunStore, StoreError
from tests.conftest import REPO
from tests.services.streams import T0, sample, train_stream

WRITER = [sys.executable, "-m", "tests.services.store_writer"]


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "data" / "runs.sqlite3"


def _tables(path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_an_empty_database_is_migrated_to_the_current_schema_in_wal_mode(db_path):
    with RunStore(db_path) as store:
        assert store.schema_version() == SCHEMA_VERSION
    assert {"schema_version", "runs", "events", "telemetry"} <= _tables(db_path)
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    with RunStore(db_path) as store:  # opening again changes nothing
        assert store.schema_version() == SCHEMA_VERSION
        assert store.list_runs() == []


def test_a_later_migration_upgrades_a_database_in_place_keeping_its_runs(db_path, monkeypatch):
    with RunStore(db_path) as store:
        store.begin_run("r1", "local", {"workload": "train"})
        store.finish_run("r1", {"status": "ok"})
    extra = (("ALTER TABLE runs ADD COLUMN note TEXT", "UPDATE runs SET note = 'kept'"),)
    monkeypatch.setattr(store_module, "MIGRATIONS", store_module.MIGRATIONS + extra)
    monkeypatch.setattr(store_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with RunStore(db_path) as store:
        assert store.schema_version() == SCHEMA_VERSION + 1
        assert store.get_run("r1").status == "ok"
    with sqlite3.connect(db_path) as db:
        assert db.execute("SELECT note FROM runs").fetchone() == ("kept",)


def test_a_database_from_a_newer_neuronbench_is_refused_with_a_sentence(db_path):
    RunStore(db_path).close()
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StoreError, match=r"newer NeuronBench \(schema 99"):
        RunStore(db_path)


def test_a_file_that_is_not_a_database_is_refused_with_a_sentence(db_path):
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="cannot be opened"):
        RunStore(db_path)


def test_a_whole_run_is_kept_spec_env_events_result_and_status(db_path):
    events = train_stream("20261122-000000-aaaaaa")
    with RunStore(db_path) as store:
        recorder = RunRecorder.start(store, None, "trn", {"workload": "train", "model": "vit"}, events[0]["run_id"])
        for event in events:
            recorder(event)
        run = store.get_run(recorder.run_id)
        assert run.status == "ok"  # the end event alone settles the status
        assert run.env["instance_type"] == "inf2.xlarge" and run.instance_type == "inf2.xlarge"
        assert run.result["train"]["throughput_samples_per_s"] == 64.0
        final = dict(run.result, host="trn")
        recorder.finish(final)
        run = store.get_run(recorder.run_id)
        assert run.result["host"] == "trn" and run.spec == {"workload": "train", "model": "vit"}
        assert run.event_count == len(events) and store.last_seq(run.run_id) == events[-1]["seq"]
        assert [e["seq"] for e in store.events(run.run_id, from_seq=5)] == [e["seq"] for e in events[4:]]
        assert [e["type"] for e in store.events(run.run_id, types=("end",))] == ["end"]


def test_a_replayed_stream_after_re_attach_stores_nothing_twice(db_path):
    events = train_stream("20261122-000000-bbbbbb")
    with RunStore(db_path) as store:
        store.begin_run("20261122-000000-bbbbbb", "h", {})
        for event in events[:6]:
            assert store.append_event("20261122-000000-bbbbbb", event) is True
        # attach --from-seq 7 replays hello first, then continues
        assert store.append_event("20261122-000000-bbbbbb", events[0]) is False
        for event in events[6:]:
            store.append_event("20261122-000000-bbbbbb", event)
        assert store.event_count("20261122-000000-bbbbbb") == len(events)


def test_telemetry_is_down_sampled_to_buckets_and_missing_stays_missing(db_path):
    with RunStore(db_path, bucket_s=2.0) as store:
        store.begin_run("tel", "h", {})
        # 8 samples, one every 0.5 s from an even second: 4 per 2-s bucket
        for i in range(8):
            util = (None, 80.0) if i == 0 else (float(10 * i), 80.0)
            store.append_event("tel", sample(i + 1, T0 + i * 0.5, util=util, cpu=None if i < 4 else 40.0,
                                             completed=100 * i))
        rows = store.telemetry("tel")
    assert [r["n"] for r in rows] == [4, 4] and rows[1]["t"] - rows[0]["t"] == 2.0
    first = rows[0]
    core0 = next(d for d in first["devices"] if d["index"] == 0)
    assert core0["util_pct"] == pytest.approx((10 + 20 + 30) / 3)  # the None reading is skipped, not a 0
    assert first["host"]["cpu_pct"] is None  # never read in this bucket: missing, not 0
    assert rows[1]["host"]["cpu_pct"] == 40.0
    assert first["runtime"]["completed"] == 300  # newest counter in the bucket
    assert core0["power_w"] is None and "devices.power_w" in first["missing"]


def test_telemetry_rebuilt_from_events_matches_what_was_recorded_live(db_path):
    with RunStore(db_path) as store:
        store.begin_run("tel", "h", {})
        for i in range(9):
            store.append_event("tel", sample(i + 1, T0 + i * 0.7))
        live = store.telemetry("tel")
        assert store.rebuild_telemetry("tel") == len(live)
        assert store.telemetry("tel") == live == downsample(store.events("tel", types=("sample",)))


def test_a_run_whose_recorder_died_reads_as_unfinished_and_can_be_resumed(db_path, tmp_path):
    # The writer is killed mid-run; every event it said was stored is there after reopening.
    proc = subprocess.Popen([*WRITER, str(db_path), "20261122-000000-kill01", "0", "--forever"],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    acknowledged = 0
    assert proc.stdout is not None
    for line in proc.stdout:
        acknowledged = int(line.split()[1])
        if acknowledged >= 40:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()

    with RunStore(db_path) as store:
        run = store.get_run("20261122-000000-kill01")
        assert run.status == "unfinished"
        assert run.event_count >= acknowledged  # nothing acknowledged was lost
        seqs = [e["seq"] for e in store.events(run.run_id)]
        assert seqs == list(range(1, len(seqs) + 1))
        last = store.last_seq(run.run_id)
        assert last == len(seqs)
        assert sum(r["n"] for r in store.telemetry(run.run_id)) == last  # every stored sample is in a bucket

        # re-attach: take the run over, continue from last_seq + 1
        assert store.resume_run(run.run_id) == last
        assert store.get_run(run.run_id).status == "running"
        store.append_event(run.run_id, sample(last + 1, T0 + (last + 1) * 0.25))
        assert sum(r["n"] for r in store.telemetry(run.run_id)) == last + 1  # the open bucket kept its samples
        store.finish_run(run.run_id, {"status": "ok"})
        assert store.get_run(run.run_id).status == "ok"


def test_a_run_being_recorded_by_a_live_process_is_running_not_unfinished(db_path):
    proc = subprocess.Popen([*WRITER, str(db_path), "20261122-000000-live01", "0", "--forever"],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert proc.stdout is not None and proc.stdout.readline().startswith("stored")
        with RunStore(db_path) as store:
            assert store.get_run("20261122-000000-live01").status == "running"
            with pytest.raises(StoreError, match="being recorded by another NeuronBench process"):
                store.resume_run("20261122-000000-live01")
    finally:
        proc.kill()
        proc.wait(timeout=30)
        proc.stdout.close()


def test_closing_the_app_mid_run_leaves_the_run_unfinished(db_path):
    with RunStore(db_path) as store:
        store.begin_run("r-open", "h", {})
        store.append_event("r-open", sample(1, T0))
    with RunStore(db_path) as store:
        assert store.get_run("r-open").status == "unfinished"
        assert [r.status for r in store.list_runs(status="unfinished")] == ["unfinished"]


def test_several_hosts_threads_and_processes_write_at_once_without_losing_an_event(db_path):
    per_writer = 150
    RunStore(db_path).close()
    procs = [subprocess.Popen([*WRITER, str(db_path), f"20261122-000000-proc0{i}", str(per_writer)],
                              stdout=subprocess.DEVNULL, cwd=REPO) for i in range(2)]
    errors: list[BaseException] = []
    store = RunStore(db_path)

    def host(n: int) -> None:
        try:
            run_id = f"20261122-000000-thrd0{n}"
            recorder = RunRecorder.start(store, None, f"host{n}", {"workload": "infer"}, run_id,
                                         on_error=lambda m: errors.append(RuntimeError(m)))
            for seq in range(1, per_writer + 1):
                recorder(sample(seq, T0 + seq))
            recorder.finish({"status": "ok"})
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=host, args=(n,), name=f"host-{n}") for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    codes = [p.wait(timeout=120) for p in procs]
    try:
        assert errors == [] and codes == [0, 0]
        runs = store.list_runs()
        assert len(runs) == 6
        assert {r.status for r in runs} == {"ok"}
        assert all(r.event_count == per_writer for r in runs)
    finally:
        store.close()


@pytest.mark.parametrize("ref, sentence", [
    ("", "give a run id"), (" ", "give a run id"), ("\t\n", "give a run id"),
    ("2026", "a run id prefix needs at least 8 characters"), ("%", "is not a run id"),
    ("x" * 81, "is not a run id"), ("a" * 100_000, "is not a run id"), ("\udcff", "not valid text"),
])
def test_a_blank_short_or_impossible_reference_names_no_run_even_when_one_is_stored(db_path, ref, sentence):
    with RunStore(db_path) as store:
        store.begin_run("20261122-010101-aaaaaa", "h", {})
        with pytest.raises(BadSpecError, match=sentence) as refused:
            store.resolve(ref)
        assert len(str(refused.value)) < 400  # a long reference is quoted shortened
        assert store.resolve("20261122-010101-aaaaaa") == "20261122-010101-aaaaaa"


def test_runs_are_found_by_a_unique_prefix(db_path):
    with RunStore(db_path) as store:
        for run_id in ("20261122-010101-aaaaaa", "20261122-010101-aaaabb", "20261123-000000-cccccc"):
            store.begin_run(run_id, "h", {})
            store.finish_run(run_id, {"status": "ok"})
        assert store.resolve("20261123") == "20261123-000000-cccccc"
        assert store.load("20261122-010101-aaaab").run_id == "20261122-010101-aaaabb"
        with pytest.raises(StoreError, match="matches several runs"):
            store.resolve("20261122-010101-aaaa")
        with pytest.raises(StoreError, match="no run 'nope-nope'"):
            store.resolve("nope-nope")
        assert [r.run_id for r in store.list_runs(limit=2)] == ["20261123-000000-cccccc", "20261122-010101-aaaabb"]
        with pytest.raises(StoreError, match="already in the store"):
            store.begin_run("20261123-000000-cccccc", "h", {})


def test_a_store_failure_is_reported_once_and_does_not_stop_the_run(db_path, monkeypatch):
    monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 100)
    messages = []
    with RunStore(db_path) as store:
        recorder = RunRecorder.start(store, None, "h", {}, "r-locked", on_error=messages.append)
        recorder(sample(1, T0))
        # Another process holds the write lock past the busy timeout (a stuck writer, a backup tool).
        other = sqlite3.connect(db_path, isolation_level=None)
        other.execute("BEGIN EXCLUSIVE")
        try:
            for seq in range(2, 5):
                recorder(sample(seq, T0 + seq))  # must not raise: the benchmark goes on
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert len(messages) == 1 and "stopped recording run r-locked" in messages[0]
        assert "locked" in messages[0]
        assert store.event_count("r-locked") == 1


def test_a_sample_with_groups_missing_or_null_is_stored_without_inventing_values(db_path):
    sparse = {"v": 1, "seq": 1, "t": T0, "type": "sample", "source": "procfs", "period_s": 1.0,
              "host": None, "devices": [{"kind": "cpu", "index": None, "util_pct": None}], "runtime": None,
              "process": None, "missing": {"host": "procfs unreadable"}}
    with RunStore(db_path) as store:
        store.begin_run("sparse", "h", {})
        store.append_event("sparse", sparse)
        [row] = store.telemetry("sparse")
    assert row["host"] == {"cpu_pct": None, "mem_used": None, "mem_total": None}
    assert row["devices"][0]["util_pct"] is None and row["runtime"]["completed"] is None
    assert row["missing"] == {"host": "procfs unreadable"}


def test_deleting_a_run_removes_its_events_and_telemetry_and_leaves_the_others(db_path):
    keep, gone = "20261122-000000-keep01", "20261122-000000-gone01"
    with RunStore(db_path, bucket_s=2.0) as store:
        for run_id in (keep, gone):
            recorder = RunRecorder.start(store, None, "h", {"workload": "train"}, run_id)
            for event in train_stream(run_id):
                recorder(event)
            recorder(sample(100, T0 + 100.0))
            recorder.finish(dict(store.get_run(run_id).result))
        before = store.event_count(gone)
        assert store.delete_run(gone) == before > 0
        assert store.get_run(gone) is None
        assert list(store.events(gone)) == [] and store.telemetry(gone) == []
        raw = sqlite3.connect(db_path)
        assert raw.execute("SELECT COUNT(*) FROM events WHERE run_id = ?", (gone,)).fetchone() == (0,)
        assert raw.execute("SELECT COUNT(*) FROM telemetry WHERE run_id = ?", (gone,)).fetchone() == (0,)
        raw.close()
        assert [r.run_id for r in store.list_runs()] == [keep] and store.telemetry(keep)
        with pytest.raises(StoreError, match="no run"):
            store.delete_run(gone)


def test_a_run_being_recorded_cannot_be_deleted(db_path):
    with RunStore(db_path) as store:
        store.begin_run("20261122-000000-live01", "h", {})
        with pytest.raises(StoreError, match="being recorded now: cancel it"):
            store.delete_run("20261122-000000-live01")
        assert store.get_run("20261122-000000-live01").status == "running"
