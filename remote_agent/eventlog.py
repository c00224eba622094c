"""Writing events: the run's sequenced log, and the workers' unsequenced side files."""
from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from typing import IO, Any, Callable, Dict, Optional

import remote_agent
from remote_agent.diskspace import LineAppender, is_disk_full
from remote_agent.protocol import PROTOCOL_VERSION, encode, finite, make_event


class EventLog:
    """Assigns ``seq`` and appends each event to a binary stream, flushed at once.

    Thread-safe: the supervisor's relay loop, its stderr reader and the telemetry
    sampler all emit through one EventLog.  An event is written whole or not at
    all.  With ``on_full``, an event the full disk refused is dropped (its seq is
    the next event's) and ``on_full()`` is called, instead of raising in whichever
    thread emitted it.
    """

    def __init__(self, stream: IO[bytes], next_seq: int = 1,
                 on_full: Optional[Callable[[], None]] = None) -> None:
        self._stream = stream
        self._lines = LineAppender(stream)
        self._seq = next_seq
        self._lock = threading.Lock()
        self.on_full = on_full

    @classmethod
    def open(cls, path: str, next_seq: int = 1) -> EventLog:
        return cls(open(path, "ab", buffering=0), next_seq)

    def emit(self, type_: str, t: Optional[float] = None, **payload: Any) -> Optional[Dict[str, Any]]:
        with self._lock:
            event = make_event(type_, self._seq, t, **payload)
            try:
                whole = self._lines.append(encode(event))
                self._stream.flush()
            except OSError as exc:
                if self.on_full is None or not is_disk_full(exc):
                    raise
                whole, event = False, None  # not begun: dropped, and its seq is the next event's
            else:
                self._seq += 1  # begun: it is the log's, its rest written first once there is room
            if whole:
                return event
            if self.on_full is None:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.on_full()  # outside the lock: it may stop the workload, whose last words are emitted here too
        return event

    def close(self) -> None:
        self._stream.close()


def emit_hello(log: EventLog, run_id: Optional[str], pid: int, spec: Optional[Dict[str, Any]] = None) -> None:
    """The handshake that starts every stream.  ``spec`` is an extra field (allowed by protocol v1):
    ``attach`` always replays hello first, so an app attaching from another computer knows what runs."""
    extra = {} if spec is None else {"spec": spec}
    log.emit("hello", agent_version=remote_agent.__version__, protocol_version=PROTOCOL_VERSION, pid=pid,
             python=sys.version.split()[0], run_id=run_id, **extra)


class WorkerEvents:
    """A workload process's side channel to its supervisor: events without ``seq``.

    Workers never write the run's log themselves (several torchrun ranks would
    race for ``seq``); the supervisor reads these files, numbers the events and
    appends them.  Compiler messages printed on stdout cannot corrupt this file.
    """

    def __init__(self, path: str) -> None:
        self._file = open(path, "ab", buffering=0)
        self._lines = LineAppender(self._file)
        self._lock = threading.Lock()

    def emit(self, type_: str, t: Optional[float] = None, **payload: Any) -> None:
        event = {"v": 1, "t": time.time() if t is None else t, "type": type_}
        event.update(payload)
        line = json.dumps(finite(event), separators=(",", ":"), allow_nan=False, default=str) + "\n"
        with self._lock:
            if not self._lines.append(line.encode("utf-8")):  # never two lines run together for the supervisor
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self) -> None:
        self._file.close()
