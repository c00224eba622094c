"""The run store: every run, each raw event as it arrives, and down-sampled telemetry, in SQLite.

Durability: WAL journal, one short write transaction per event (``synchronous=NORMAL``:
a committed event survives the app being killed; only a power cut may lose the
last moments).  An event that was received is stored before the caller moves on.

Concurrency: one connection per thread (threads of one app recording several
hosts) and ``BEGIN IMMEDIATE`` + ``busy_timeout`` between processes (a CLI run
next to the GUI).  Events are keyed by (run_id, seq), so replaying a stream after
a re-attach stores nothing twice.

Unfinished runs: the process recording a run holds an advisory lock on
``<data>/locks/<run_id>.lock``.  The kernel drops it when that process dies, so a
"running" row whose lock is free is a run whose recorder died: it is shown (and
kept) as ``unfinished`` until someone re-attaches (``resume_run``).
"""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from app.core.errors import NeuronBenchError
from app.core.partial_runs import settled_status
from app.core.quoting import quoted
from app.core.run_ref import MIN_PREFIX, check_run_ref, prefix_too_short
from app.core.runrecord import StoredRun, served_model
from app.core.telemetry import DEFAULT_BUCKET_S, Bucketer, bucket_start, downsample
from remote_agent.protocol import check_run_id

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: runs stay "running" until finished
    fcntl = None  # type: ignore[assignment]

BUSY_TIMEOUT_MS = 30_000

# Numbered migrations: MIGRATIONS[i] takes the schema from version i to i + 1.  Never edit a
# shipped one; append a new one (users' databases are upgraded in place when opened).
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE runs (
            run_id        TEXT PRIMARY KEY,
            host          TEXT NOT NULL,
            workload      TEXT,
            model         TEXT,
            status        TEXT NOT NULL,
            created_at    REAL NOT NULL,
            started_at    REAL,
            ended_at      REAL,
            updated_at    REAL,
            spec_json     TEXT NOT NULL,
            env_json      TEXT,
            result_json   TEXT,
            instance_type TEXT,
            declared_json TEXT
        )""",
        "CREATE INDEX runs_by_created ON runs (created_at)",
        """CREATE TABLE events (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            seq    INTEGER NOT NULL,
            t      REAL,
            type   TEXT NOT NULL,
            body   TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        ) WITHOUT ROWID""",
        """CREATE TABLE telemetry (
            run_id TEXT NOT NULL REFERENCES runs (run_id) ON DELETE CASCADE,
            t      REAL NOT NULL,
            body   TEXT NOT NULL,
            PRIMARY KEY (run_id, t)
        ) WITHOUT ROWID""",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(NeuronBenchError):
    """The run store cannot be opened or a run is not in it."""


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def migrate(db: sqlite3.Connection) -> int:
    """Bring the schema to SCHEMA_VERSION inside one write transaction; returns the version found."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        row = db.execute("SELECT version FROM schema_version").fetchone()
        found = row[0] if row else 0
        if found > SCHEMA_VERSION:
            raise StoreError(f"the run store was written by a newer NeuronBench (schema {found}, this one knows "
                             f"{SCHEMA_VERSION}): upgrade NeuronBench to read it")
        for version in range(found, SCHEMA_VERSION):
            for statement in MIGRATIONS[version]:
                db.execute(statement)
        if row is None:
            db.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        elif found != SCHEMA_VERSION:
            db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION,))
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return found


class RunStore:
    """Thread-safe access to the run database at ``path`` (created and migrated on open)."""

    def __init__(self, path: str | os.PathLike[str], bucket_s: float = DEFAULT_BUCKET_S) -> None:
        self.path = Path(path)
        self.locks_dir = self.path.parent / "locks"
        self.bucket_s = bucket_s
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._guard = threading.Lock()  # guards _all, _claims and _bucketers
        self._claims: dict[str, Any] = {}
        self._bucketers: dict[str, Bucketer] = {}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.locks_dir.mkdir(parents=True, exist_ok=True)
        try:
            migrate(self._db())
        except sqlite3.DatabaseError as exc:
            self.close()
            raise StoreError(f"the run store {self.path} cannot be opened: {exc}") from None

    # -- connections ----------------------------------------------------------------------------
    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            # isolation_level=None: we issue BEGIN/COMMIT ourselves, so nothing is held open by surprise.
            db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None,
                                 check_same_thread=False)
            db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute("PRAGMA foreign_keys = ON")
            self._local.db = db
            with self._guard:
                self._all.append(db)
        return db

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        """Close every thread's connection and release this process's run locks."""
        with self._guard:
            for handle in self._claims.values():
                handle.close()
            self._claims.clear()
            for db in self._all:
                with contextlib.suppress(sqlite3.Error):
                    db.close()
            self._all.clear()
        self._local = threading.local()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def schema_version(self) -> int:
        return self._db().execute("SELECT version FROM schema_version").fetchone()[0]

    # -- recording ownership (unfinished detection) ------------------------------------------------
    def _lock_path(self, run_id: str) -> Path:
        return self.locks_dir / f"{check_run_id(run_id)}.lock"

    def _claim(self, run_id: str) -> None:
        if fcntl is None:
            return
        handle = open(self._lock_path(run_id), "a+")  # held until the run ends
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise StoreError(f"run {run_id} is being recorded by another NeuronBench process") from None
        with self._guard:
            self._claims[run_id] = handle

    def _release(self, run_id: str) -> None:
        with self._guard:
            handle = self._claims.pop(run_id, None)
            self._bucketers.pop(run_id, None)
        if handle is not None:
            # Unlink while still holding the lock: a process that opened the old file before
            # this fails to lock it; one that opens after gets a fresh file.  Never a stale claim.
            with contextlib.suppress(OSError):
                self._lock_path(run_id).unlink()
            handle.close()

    def is_recording(self, run_id: str) -> bool:
        """Whether some live process (this one included) is recording the run now."""
        if fcntl is None:
            return True
        with self._guard:
            if run_id in self._claims:
                return True
        try:
            handle = open(self._lock_path(run_id))
        except OSError:
            return False
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False

    # -- writing a run --------------------------------------------------------------------------
    def begin_run(self, run_id: str, host: str, spec: dict[str, Any],
                  declared: dict[str, Any] | None = None) -> None:
        """Create the run's row (status ``running``) and mark this process as its recorder."""
        check_run_id(run_id)
        self._claim(run_id)
        now = time.time()
        try:
            with self._write() as db:
                db.execute("INSERT INTO runs (run_id, host, workload, model, status, created_at, updated_at, "
                           "spec_json, declared_json) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
                           (run_id, host, spec.get("workload"), spec.get("model"), now, now, _dumps(spec),
                            _dumps(declared)))
        except sqlite3.IntegrityError:
            self._release(run_id)
            raise StoreError(f"run {run_id} is already in the store") from None

    def resume_run(self, run_id: str) -> int:
        """Take over recording an existing run (re-attach); returns the last stored seq to attach from."""
        self._require(run_id)
        self._claim(run_id)
        with self._write() as db:
            db.execute("UPDATE runs SET status = 'running', updated_at = ? WHERE run_id = ? AND status IN "
                       "('running', 'unfinished')", (time.time(), run_id))
        return self.last_seq(run_id)

    def append_event(self, run_id: str, event: dict[str, Any]) -> bool:
        """Store one validated event; returns False when its seq was already stored (a replay).

        Side effects kept in the same transaction: a ``probe`` sets the run's
        environment, a ``result`` its Result, an ``end`` its status, and a
        ``sample`` updates its telemetry bucket.
        """
        seq, kind, t = event["seq"], event["type"], event.get("t")
        with self._write() as db:
            cur = db.execute("INSERT OR IGNORE INTO events (run_id, seq, t, type, body) VALUES (?, ?, ?, ?, ?)",
                             (run_id, seq, t, kind, _dumps(event)))
            if cur.rowcount == 0:
                return False
            db.execute("UPDATE runs SET updated_at = ?, started_at = COALESCE(started_at, ?) WHERE run_id = ?",
                       (time.time(), t, run_id))
            # A multi-node run's stream carries every node's events (``node`` > 0 for the others): the
            # run's environment and its telemetry rows are node 0's; the other nodes' stay in the events
            # and in the Result's per-node blocks.
            other_node = bool(event.get("node"))
            if kind == "probe" and not other_node:
                env = event.get("env") or {}
                db.execute("UPDATE runs SET env_json = ?, instance_type = COALESCE(?, instance_type) "
                           "WHERE run_id = ?", (_dumps(env), env.get("instance_type"), run_id))
            elif kind == "result" and "node" not in event:  # a node's own Result is not the run's
                db.execute("UPDATE runs SET result_json = COALESCE(result_json, ?) WHERE run_id = ?",
                           (_dumps(event.get("result")), run_id))
            elif kind == "end":
                db.execute("UPDATE runs SET status = ?, ended_at = ? WHERE run_id = ?",
                           (event.get("status"), t, run_id))
            elif kind == "sample" and not other_node:
                row = self._bucketer(db, run_id, event).feed(event)
                db.execute("INSERT OR REPLACE INTO telemetry (run_id, t, body) VALUES (?, ?, ?)",
                           (run_id, row["t"], _dumps(row)))
        return True

    def _bucketer(self, db: sqlite3.Connection, run_id: str, event: dict[str, Any]) -> Bucketer:
        with self._guard:
            bucketer = self._bucketers.get(run_id)
        if bucketer is None:
            # A fresh process (a re-attach after a crash): seed the open bucket with the samples
            # already stored in it, so rewriting the bucket's row keeps them.
            bucketer = Bucketer(self.bucket_s)
            start = bucket_start(float(event.get("t") or 0.0), self.bucket_s)
            for (body,) in db.execute("SELECT body FROM events WHERE run_id = ? AND type = 'sample' AND t >= ? "
                                      "AND seq < ? ORDER BY seq", (run_id, start, event["seq"])):
                sample = json.loads(body)
                if not sample.get("node"):
                    bucketer.feed(sample)
            with self._guard:
                self._bucketers[run_id] = bucketer
        return bucketer

    def finish_run(self, run_id: str, result: dict[str, Any]) -> None:
        """Store the final Result (host and cost filled in) and its status; stop recording."""
        status = result.get("status") or "failed"
        try:
            with self._write() as db:
                db.execute("UPDATE runs SET result_json = ?, status = ?, ended_at = COALESCE(ended_at, ?), "
                           "updated_at = ?, instance_type = COALESCE(?, instance_type) WHERE run_id = ?",
                           (_dumps(result), status, time.time(), time.time(),
                            (result.get("cost") or {}).get("instance_type"), run_id))
        finally:
            self._release(run_id)

    def declare_instance(self, run_id: str, declared: dict[str, Any], result: dict[str, Any] | None) -> None:
        """Keep an instance type declared after the run (``declared``), and the Result it re-priced, if any.

        A run some process is recording now is refused: its recorder would price its
        Result with the type it started with and overwrite this one.
        """
        self._require(run_id)
        if self.is_recording(run_id):
            raise StoreError(f"run {run_id} is being recorded now: declare its instance type once it has ended")
        with self._write() as db:
            db.execute("UPDATE runs SET declared_json = ?, instance_type = ?, result_json = COALESCE(?, result_json), "
                       "updated_at = ? WHERE run_id = ?",
                       (_dumps(declared), declared.get("instance_type"), _dumps(result), time.time(), run_id))

    def abandon_run(self, run_id: str) -> None:
        """Stop recording without an end (the app is closing mid-run): the run reads as unfinished."""
        with self._write() as db:
            db.execute("UPDATE runs SET status = 'unfinished' WHERE run_id = ? AND status = 'running'", (run_id,))
        self._release(run_id)

    def rebuild_telemetry(self, run_id: str) -> int:
        """Recompute a run's telemetry rows from its stored sample events; returns the row count."""
        rows = downsample((e for e in self.events(run_id, types=("sample",)) if not e.get("node")), self.bucket_s)
        with self._write() as db:
            db.execute("DELETE FROM telemetry WHERE run_id = ?", (run_id,))
            db.executemany("INSERT INTO telemetry (run_id, t, body) VALUES (?, ?, ?)",
                           [(run_id, row["t"], _dumps(row)) for row in rows])
        return len(rows)

    def delete_run(self, run_id: str) -> int:
        """Forget a run: its row, every stored event and its telemetry; returns the events removed.

        A run some process is recording now is refused (its recorder would write to a
        row that is gone): cancel it, or wait for it to end.  The host's own run
        directory is left alone.
        """
        self._require(run_id)
        if self.is_recording(run_id):
            raise StoreError(f"run {run_id} is being recorded now: cancel it or let it finish before deleting it")
        with self._write() as db:
            # Explicit deletes rather than ON DELETE CASCADE alone: the cascade needs
            # foreign_keys=ON on the connection, and a run must never leave events behind.
            removed = db.execute("DELETE FROM events WHERE run_id = ?", (run_id,)).rowcount
            db.execute("DELETE FROM telemetry WHERE run_id = ?", (run_id,))
            db.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        return removed

    # -- reading --------------------------------------------------------------------------------
    def last_seq(self, run_id: str) -> int:
        """The highest seq stored for the run (0 when none): re-attach with ``--from-seq last_seq + 1``."""
        row = self._db().execute("SELECT MAX(seq) FROM events WHERE run_id = ?", (run_id,)).fetchone()
        return row[0] or 0

    def events(self, run_id: str, from_seq: int = 1, types: Iterable[str] | None = None) -> Iterator[dict]:
        """The run's stored events from ``from_seq`` on, in seq order."""
        sql = "SELECT body FROM events WHERE run_id = ? AND seq >= ?"
        params: list[Any] = [run_id, from_seq]
        if types is not None:
            kinds = list(types)
            sql += f" AND type IN ({','.join('?' * len(kinds))})"
            params += kinds
        for (body,) in self._db().execute(sql + " ORDER BY seq", params).fetchall():
            yield json.loads(body)

    def event_count(self, run_id: str) -> int:
        return self._db().execute("SELECT COUNT(*) FROM events WHERE run_id = ?", (run_id,)).fetchone()[0]

    def telemetry(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._db().execute("SELECT body FROM telemetry WHERE run_id = ? ORDER BY t", (run_id,)).fetchall()
        return [json.loads(body) for (body,) in rows]

    _COLUMNS = ("run_id, host, workload, model, status, created_at, started_at, ended_at, updated_at, spec_json, "
                "env_json, result_json, instance_type, declared_json")

    def _row(self, row: tuple) -> StoredRun:
        (run_id, host, workload, model, status, created, started, ended, updated, spec, env, result, itype,
         declared) = row
        if status == "running" and not self.is_recording(run_id):
            status = "unfinished"
            with self._write() as db:  # keep it: the next reader need not test the lock again
                db.execute("UPDATE runs SET status = 'unfinished' WHERE run_id = ? AND status = 'running'",
                           (run_id,))
        spec, result = _loads(spec), _loads(result)
        settled = settled_status(status, result)  # a failed sweep that kept finished points, as stored before
        if settled != status:
            status, result = settled, dict(result, status=settled)
        if workload == "serve" and not str(model or "").startswith("hf:"):
            model = served_model(spec or {}, result) or model  # what the endpoint served, not the form's default
        return StoredRun(run_id=run_id, host=host, status=status, spec=spec, created_at=created,
                         workload=workload, model=model, started_at=started, ended_at=ended, updated_at=updated,
                         env=_loads(env), result=result, instance_type=itype, declared=_loads(declared))

    def get_run(self, run_id: str) -> StoredRun | None:
        row = self._db().execute(f"SELECT {self._COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return None
        run = self._row(row)
        run.event_count = self.event_count(run_id)
        return run

    def _require(self, run_id: str) -> StoredRun:
        run = self.get_run(run_id)
        if run is None:
            raise StoreError(f"no run {quoted(run_id)} in the store: `neuronbench runs list` shows the runs kept")
        return run

    def resolve(self, ref: str) -> str:
        """A full run id from an id or an unambiguous prefix of one (as ``git`` takes short hashes).

        An empty, blank or too short reference is refused (``check_run_ref``): it would match every run.
        """
        ref = check_run_ref(ref)
        if self._db().execute("SELECT 1 FROM runs WHERE run_id = ?", (ref,)).fetchone():
            return ref
        if len(ref) < MIN_PREFIX:
            raise prefix_too_short(ref)
        # A plain comparison, not LIKE: no pattern to escape, and no "pattern too complex" from a long one.
        hits = [r[0] for r in self._db().execute("SELECT run_id FROM runs WHERE substr(run_id, 1, ?) = ? "
                                                 "ORDER BY run_id LIMIT 3", (len(ref), ref))]
        if len(hits) == 1:
            return hits[0]
        if not hits:
            raise StoreError(f"no run {quoted(ref)} in the store: `neuronbench runs list` shows the runs kept")
        raise StoreError(f"{quoted(ref)} matches several runs ({', '.join(hits[:2])}, …): give more of the id")

    def load(self, ref: str) -> StoredRun:
        """The run named by ``ref`` (id or unique prefix), with its event count."""
        return self._require(self.resolve(ref))

    def list_runs(self, limit: int | None = None, host: str | None = None,
                  status: str | None = None) -> list[StoredRun]:
        """Runs, newest first (an ``unfinished`` run may still be stored as ``running``: see ``_row``)."""
        sql = f"SELECT {self._COLUMNS} FROM runs"
        where, params = [], []
        if host:
            where.append("host = ?")
            params.append(host)
        if status == "unfinished":
            where.append("status IN ('running', 'unfinished')")
        elif status == "partial":  # runs recorded before "partial" existed were stored as failed
            where.append("status IN ('partial', 'failed')")
        elif status:
            where.append("status = ?")
            params.append(status)
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, run_id DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        runs = [self._row(row) for row in self._db().execute(sql, params).fetchall()]
        # Counted for the listed runs only (the primary key's index), not over every event stored.
        for run in runs:
            run.event_count = self.event_count(run.run_id)
        return [r for r in runs if status is None or r.status == status]
