"""Expensive read-only things built once per test session, shared by every pytest-xdist worker.

``make test`` runs the suite on several worker processes (pytest-xdist).  A session-scoped fixture is
then set up once per *worker*: three workers that each record the same three real runs spend three
times the CPU on it.  ``built_once`` builds a folder once for the whole session instead: the first
worker to ask builds it under a file lock in the session's shared temporary folder (the parent of
every worker's own ``basetemp``), the others wait for the lock and find it done.  Without xdist it is
simply built once.  Callers treat the folder as read-only (copy it to change it: ``private_copy``).

Another pytest session running at the same time (a second worktree, a developer's subset) has its
own session folder, so nothing is shared between sessions.
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

DONE = "built-once.json"  # written last: a folder without it was never finished (a crash mid-build)


def session_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder all workers of this session share: the parent of a worker's basetemp, else basetemp."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str,
               build: Callable[[Path], dict[str, Any] | None]) -> tuple[Path, dict[str, Any]]:
    """(the folder ``name``, what ``build`` returned), ``build(folder)`` run once for the whole session.

    ``build`` fills the empty folder and may return a JSON-ready dict (the recorded results, say), which
    every worker gets back.  If it raises, the folder is removed and the next caller tries again.
    """
    root = session_root(tmp_path_factory) / "built-once"
    root.mkdir(exist_ok=True)
    folder, done = root / name, root / name / DONE
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this worker dies
        try:
            if not done.exists():
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                try:
                    value = build(folder)
                except BaseException:
                    shutil.rmtree(folder, ignore_errors=True)
                    raise
                done.write_text(json.dumps({"value": value}))
            return folder, json.loads(done.read_text())["value"]
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def private_copy(folder: Path, into: Path) -> Path:
    """A copy of a shared folder that this worker may change (SQLite files, caches), at ``into``."""
    shutil.copytree(folder, into, symlinks=True, ignore=shutil.ignore_patterns(DONE))
    return into
