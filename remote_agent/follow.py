"""Following a run's event log: what ``run`` and ``attach`` stream to the app."""
from __future__ import annotations

import json
import os
import time
from typing import IO, Any, Callable, Dict, List, Optional

from remote_agent.filewatch import FileWatch

# How often a follower with nothing to read checks that the supervisor is still alive: a killed
# supervisor writes nothing that would wake it.
ALIVE_CHECK_S = 1.0


class LineReader:
    """Reads complete lines appended to a file since the last call (the file may not exist yet)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._handle: Optional[IO[bytes]] = None
        self._partial = b""

    def read_lines(self) -> List[bytes]:
        if self._handle is None:
            try:
                self._handle = open(self.path, "rb")
            except FileNotFoundError:
                return []
        chunk = self._handle.read()
        if not chunk:
            return []
        data = self._partial + chunk
        lines = data.split(b"\n")
        self._partial = lines.pop()  # an incomplete last line waits for its newline
        return [line for line in lines if line.strip()]

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()


def _parsed(line: bytes) -> Dict[str, Any]:
    """The event a log line holds, or {} for one that is not a JSON object."""
    try:
        event = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError too
        return {}
    return event if isinstance(event, dict) else {}


def follow(path: str, out: IO[bytes], from_seq: int, alive: Callable[[], bool]) -> Optional[str]:
    """Copy events from the log at ``path`` to ``out`` until the ``end`` event.

    The stream always starts with the run's ``hello`` (seq 1), then every event
    with ``seq >= from_seq``: an attaching app gets the handshake and exactly
    the events it does not hold yet.  Returns the end status, or None when the
    supervisor died (``alive()`` turned false) before writing ``end``.

    Between reads the follower sleeps in the kernel until the log is written
    (``FileWatch``), checking ``alive()`` once every ``ALIVE_CHECK_S`` while idle.
    """
    folder, name = os.path.split(os.path.abspath(path))
    watch = FileWatch(folder, lambda changed: changed == name)  # before the first read: no write slips by
    reader = LineReader(path)
    last_look = False
    last_seq = 0  # of the last event read with a seq
    notified = True  # the last wait ended because the kernel said the log changed
    next_check = time.monotonic() + ALIVE_CHECK_S
    try:
        while True:
            lines = reader.read_lines()
            for line in lines:
                event = _parsed(line)
                seq = event.get("seq")
                if type(seq) is not int:
                    # A line cut short (a full disk, a crash mid-write) or otherwise broken: the app refuses it
                    # with its reason and goes on.  Passed on only past the events the app already holds.
                    if last_seq >= from_seq - 1:
                        out.write(line + b"\n")
                    continue
                last_seq = seq
                if seq == 1 or seq >= from_seq:
                    out.write(line + b"\n")
                if event.get("type") == "end":
                    out.flush()
                    return str(event.get("status"))
            if lines:
                out.flush()
                if not notified and watch.kernel_notified and not watch.pending():
                    # Lines the kernel never reported: another machine writes this folder (a Slurm
                    # node through a shared home), which inotify cannot see.  Poll instead.
                    watch.fall_back_to_polling()
                if last_look:
                    continue
            elif last_look:
                return None
            elif not watch.kernel_notified or time.monotonic() >= next_check:
                next_check = time.monotonic() + ALIVE_CHECK_S
                if not alive():
                    # Read once more: the supervisor may have written its last lines as it exited.
                    last_look = True
                    continue
            if watch.kernel_notified:
                notified = watch.wait(max(0.0, next_check - time.monotonic()))
            else:
                watch.wait(active=bool(lines))
    finally:
        reader.close()
        watch.close()
