"""Whether the runs a history lists changed since it last read them, cheaply (no Qt).

A run recorded by the CLI while the app is open, or one the app records itself, must
show up in the history without a Refresh, but reading every run (spec, Result and
all) every second would cost far more than the rare change it looks for.  So a watch
asks two cheap questions, from a worker thread:

1. SQLite's own change counter, ``PRAGMA data_version`` on a connection kept open:
   it moves only when another connection (a CLI process, the app's recorder)
   committed.  Most looks end here, without touching a table.
2. When it moved: a signature of what the history shows of the runs (how many, the
   newest, how many are running, the last time a finished run changed, how many have
   a probe or a declared type).  A running run's events change none of these, so a
   live run does not reload the history every few seconds; its start, its probe and
   its end do (a run's end changes its status; a declared type its ``updated_at``).

The signature reads short columns and tests two JSON columns for NULL; it leaves the
Results alone (testing ``result_json`` reads every Result: 28 ms for 2,000 runs
instead of 4).  On 2,000 stored runs: a look with no commit 0.005 ms, with one 2 ms,
against 400-600 ms for the full read a change costs (measured on the loaded 2-vCPU
development VM, Results padded to 15 KB).
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path

Signature = tuple

SIGNATURE_SQL = (
    "SELECT COUNT(*), MAX(created_at), TOTAL(status = 'running'), "
    "MAX(CASE WHEN status <> 'running' THEN updated_at END), "
    "COUNT(env_json), COUNT(declared_json) FROM runs"
)
BUSY_TIMEOUT_MS = 2_000


def _connect(path: Path) -> sqlite3.Connection | None:
    """A connection that only reads, or None while the store does not exist (it is never created here)."""
    if not os.path.exists(path):
        return None
    # check_same_thread off: one look at a time, but not always from the same worker thread.
    db = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
    db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    return db


def runs_signature(db: sqlite3.Connection) -> Signature | None:
    """What the history shows of the runs, in a few numbers (None: the store has no runs table yet)."""
    try:
        return tuple(db.execute(SIGNATURE_SQL).fetchone())
    except sqlite3.OperationalError:
        return None


def read_signature(path: str | os.PathLike[str]) -> Signature | None:
    """The signature of the store at ``path`` (a worker thread: opens and closes its own connection)."""
    db = _connect(Path(path))
    if db is None:
        return None
    try:
        return runs_signature(db)
    finally:
        db.close()


class StoreWatch:
    """Looks for changes to the runs listed, from one worker thread at a time.

    ``baseline`` is the signature of what the view shows (set when it reads the store);
    ``changed()`` says whether the store differs from it now.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.baseline: Signature | None = None
        self._db: sqlite3.Connection | None = None
        self._version: int | None = None
        self._current: Signature | None = None

    def changed(self) -> bool:
        """Whether the runs listed differ from ``baseline`` (a worker thread; a store that cannot be read: no)."""
        try:
            if self._db is None:
                self._db = _connect(self.path)
                if self._db is None:
                    return False
            version = self._db.execute("PRAGMA data_version").fetchone()[0]
            if version != self._version:
                self._version = version
                self._current = runs_signature(self._db)
        except sqlite3.Error:
            self.close()  # e.g. the file was replaced: open it afresh next time
            return False
        return self.baseline is not None and self._current is not None and self._current != self.baseline

    def close(self) -> None:
        """Close the connection (not while ``changed`` runs on another thread)."""
        db, self._db, self._version = self._db, None, None
        if db is not None:
            db.close()
