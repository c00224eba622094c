"""A workload's stdout/stderr copied to ``stderr.log`` and streamed as ``log`` events, at most so many a second.

Shared by the supervisor's launches; it keeps the last lines in memory too, since with the disk full
``stderr.log`` cannot say why a workload stopped.
"""
from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable, Deque, Optional

from remote_agent.diskspace import LineAppender, is_disk_full
from remote_agent.eventlog import EventLog

LOG_LINES_PER_S = 20  # stderr lines streamed live per second; all of them stay in stderr.log

# Lines of a workload's output that say its disk was full (Python's OSError, a C library's perror).
DISK_FULL_TEXTS = (b"[Errno 28]", b"No space left on device", b"[Errno 122]", b"Disk quota exceeded")


class StderrPump(threading.Thread):
    """Copies a workload's output to stderr.log and streams it as ``log`` events, rate-limited.

    The last lines are also kept in memory: with the disk full, stderr.log cannot say why it stopped.
    """

    def __init__(self, stream: Any, log_path: str, events: EventLog,
                 on_full: Optional[Callable[[], None]] = None) -> None:
        super().__init__(name="stderr-pump", daemon=True)
        self.stream, self.log_path, self.events = stream, log_path, events
        self.on_full = on_full
        self.last: Deque[bytes] = collections.deque(maxlen=40)

    def said_disk_full(self) -> bool:
        return any(text in line for line in list(self.last) for text in DISK_FULL_TEXTS)

    def _write(self, log: Optional[LineAppender], raw: bytes) -> Optional[LineAppender]:
        """Append to stderr.log; a full disk ends the copy (the pipe is still read, so the workload never blocks)."""
        if log is None:
            return None
        try:
            if log.append(raw):
                return log
        except OSError as exc:
            if not is_disk_full(exc):
                raise
        log.handle.close()
        if self.on_full is not None:
            self.on_full()
        return None

    def run(self) -> None:
        budget_start, sent, held = time.monotonic(), 0, 0
        log: Optional[LineAppender] = None
        try:
            log = LineAppender(open(self.log_path, "ab", buffering=0))
        except OSError as exc:
            if is_disk_full(exc) and self.on_full is not None:
                self.on_full()
        try:
            for raw in iter(self.stream.readline, b""):
                self.last.append(raw)
                log = self._write(log, raw)
                now = time.monotonic()
                if now - budget_start >= 1.0:
                    if held:
                        self.events.emit("log", level="info", message="(%d more output lines in stderr.log)" % held)
                    budget_start, sent, held = now, 0, 0
                if sent < LOG_LINES_PER_S:
                    self.events.emit("log", level="stderr", message=raw.decode("utf-8", "replace").rstrip())
                    sent += 1
                else:
                    held += 1
            if held:
                self.events.emit("log", level="info", message="(%d more output lines in stderr.log)" % held)
        finally:
            if log is not None:
                log.handle.close()
