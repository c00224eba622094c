"""Free space where a run lives: the pre-flight floor, the sentence for a full disk, and a reserve.

A run writes its event log, its workload's output and its workers' side files
into its run folder as it goes.  With the folder's disk full, Python reported it
as a supervisor that "exited with code 120" (it could not even flush its own
stderr) or as a traceback.  So a run is refused up front below a floor of free
space, and a disk that fills mid-run (ENOSPC anywhere) ends the run with one
sentence naming the folder and the free space.

To still write that sentence and the run's Result into a full disk, every run
keeps a small reserve file in its folder, made before anything else, and given
up to write the run's last events.
"""
from __future__ import annotations

import errno
import os
from typing import Optional, Tuple

ENV_MIN_FREE_MB = "NEURONBENCH_MIN_FREE_MB"
# Enough for hours of events and sample telemetry, the workload's log and the agent itself.
DEFAULT_MIN_FREE_MB = 100
RESERVE_NAME = ".space-reserve"
RESERVE_BYTES = 1 << 20  # the error, the Result (telemetry digest included) and the end fit many times over
FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def min_free_bytes() -> int:
    """The floor below which a run is refused (``NEURONBENCH_MIN_FREE_MB`` on the host, else 100 MiB)."""
    text = os.environ.get(ENV_MIN_FREE_MB, "")
    try:
        return max(0, int(float(text) * (1 << 20))) if text else DEFAULT_MIN_FREE_MB << 20
    except ValueError:
        return DEFAULT_MIN_FREE_MB << 20


def size_text(size: float) -> str:
    """1.5 MiB, 312 KiB, 0 B: the way df -h would say it, in binary units."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return ("%d %s" if unit == "B" or size >= 100 else "%.1f %s") % (size, unit)
        size /= 1024.0
    return "%d B" % size  # not reached


def existing_folder(path: str) -> str:
    """``path`` or its nearest existing parent (a run folder is made only after the check)."""
    path = os.path.abspath(path)
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path


def free_space(path: str) -> Tuple[int, int]:
    """(bytes, inodes) an unprivileged user may still use on the disk holding ``path``."""
    info = os.statvfs(existing_folder(path))
    return info.f_bavail * info.f_frsize, info.f_favail


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in FULL_ERRNOS


def preflight_problem(folder: str, floor: Optional[int] = None) -> Optional[str]:
    """The sentence refusing a run in ``folder`` when its disk has less than the floor free, else None."""
    floor = min_free_bytes() if floor is None else floor
    try:
        free, _inodes = free_space(folder)
    except OSError:
        return None  # cannot tell: the run itself will say if it cannot write
    if free >= floor:
        return None
    return ("only %s free on the disk holding %s; a run needs at least %s there (its event log and the "
            "workload's output): free some space there" % (size_text(free), folder, size_text(floor)))


def full_sentence(folder: str) -> str:
    """What the run says when its disk filled up: the folder, and what is free there now."""
    try:
        free, inodes = free_space(folder)
        now = "%s free now" % size_text(free) + (", no inode free" if inodes == 0 else "")
    except OSError:
        now = "free space unknown"
    return ("no space left on the disk holding %s (%s): the run was stopped; free some space there and run "
            "again" % (folder, now))


class LineAppender:
    """Appends lines to an unbuffered file that a reader follows as it grows (the event log, a worker's side file).

    A disk that fills mid-line makes ``write`` store part of the line and return short.  Cutting
    that part off again would break the reader, which may have read it already and goes on from
    its own offset; so the file only ever grows: the rest of the line is kept and written before
    anything else, as soon as there is room.  A reader never sees two lines run into each other.
    """

    def __init__(self, handle) -> None:
        self.handle = handle
        self.pending = b""  # the unwritten rest of a line begun in the file

    def append(self, line: bytes) -> bool:
        """Write ``line``: True when all of it is in the file, False when only its start is (the rest follows
        with the next append).  Raises OSError (ENOSPC) when none of it could be written."""
        self._drain()  # an earlier line's rest first; if that cannot go, this line is not begun
        self.pending = line
        try:
            self._drain()
        except OSError:
            if self.pending == line:
                self.pending = b""
                raise  # nothing of it was written
            return False
        return True

    def _drain(self) -> None:
        while self.pending:
            written = self.handle.write(self.pending)
            if not written:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            self.pending = self.pending[written:]


class Reserve:
    """A file of zeros kept in the run folder, removed to make room for the run's last events."""

    def __init__(self, folder: str) -> None:
        self.path = os.path.join(folder, RESERVE_NAME)

    def make(self, size: int = RESERVE_BYTES) -> None:
        """Raises OSError (ENOSPC) when the disk cannot hold it: the run could not end properly either."""
        try:
            with open(self.path, "wb") as handle:
                chunk = b"\0" * 65536
                for _ in range(size // len(chunk)):
                    handle.write(chunk)
                handle.flush()
                os.fsync(handle.fileno())  # really on disk now (tmpfs, or a filesystem with delayed allocation)
        except OSError:
            self.release()
            raise

    def release(self) -> bool:
        """Give the space back; True if there was a reserve to give."""
        try:
            os.unlink(self.path)
            return True
        except OSError:
            return False
