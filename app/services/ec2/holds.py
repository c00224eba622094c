"""Which launched instances a live run holds, and which were kept for the next run.

* A run holds its instance with an exclusive ``flock`` on ``<data>/ec2/held/<id>.lock``
  for as long as it uses it: the lock dies with the process, so `ec2 cleanup`
  (in another process) tells an instance in use from one left behind by a crash.
* ``run --keep`` records the instance in ``<data>/ec2/kept.json`` under the host's
  name: the next run on that host takes it over instead of launching another.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

try:  # POSIX; elsewhere nothing is held across processes (cleanup then asks about every instance)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

_ID = re.compile(r"^i-[0-9a-f]{8,17}$")
_LOCK = threading.Lock()


def _check(instance_id: str) -> str:
    if not _ID.match(instance_id):
        raise ValueError(f"{instance_id!r} is not an EC2 instance id")
    return instance_id


class InstanceHolds:
    """Holds on instances (this process's), and the instances kept for the next run."""

    def __init__(self, data_dir: Path) -> None:
        self.dir = Path(data_dir) / "ec2"
        self._held: dict[str, IO[str]] = {}

    def _lock_path(self, instance_id: str) -> Path:
        return self.dir / "held" / f"{_check(instance_id)}.lock"

    def hold(self, instance_id: str) -> None:
        """Mark the instance as in use by this process until ``let_go`` (or the process ends)."""
        if fcntl is None or instance_id in self._held:
            return
        path = self._lock_path(instance_id)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise
        self._held[instance_id] = handle

    def let_go(self, instance_id: str) -> None:
        handle = self._held.pop(instance_id, None)
        if handle is not None:
            with contextlib.suppress(OSError):
                self._lock_path(instance_id).unlink()
            handle.close()

    def is_held(self, instance_id: str) -> bool:
        """Whether a live NeuronBench process (this one included) uses the instance now."""
        if instance_id in self._held:
            return True
        if fcntl is None:
            return False
        path = self._lock_path(instance_id)
        if not path.exists():
            return False
        with open(path, "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
            return False

    # -- kept for the next run ------------------------------------------------------------------
    @property
    def kept_file(self) -> Path:
        return self.dir / "kept.json"

    def _read_kept(self) -> dict[str, Any]:
        try:
            data = json.loads(self.kept_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_kept(self, data: dict[str, Any]) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=".kept-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
        os.replace(tmp, self.kept_file)

    def kept(self, host: str) -> dict[str, Any] | None:
        """The instance kept for ``host`` by an earlier ``run --keep`` (its ``ec2`` block), if any."""
        entry = self._read_kept().get(host)
        return entry if isinstance(entry, dict) and _ID.match(str(entry.get("instance_id", ""))) else None

    def keep(self, host: str, block: dict[str, Any]) -> None:
        with _LOCK:
            data = self._read_kept()
            data[host] = block
            self._write_kept(data)

    def forget(self, host: str | None = None, instance_id: str | None = None) -> None:
        """Drop the kept entry of ``host``, or every entry naming ``instance_id``."""
        with _LOCK:
            data = self._read_kept()
            kept = {h: b for h, b in data.items()
                    if h != host and (instance_id is None or b.get("instance_id") != instance_id)}
            if kept != data:
                self._write_kept(kept)
