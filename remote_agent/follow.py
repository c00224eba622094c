"""Following a run's event log: what ``run`` and ``attach`` stream to the app."""
from __future__ import annotations

import json
import time
from typing import IO, Callable, List, Optional

POLL_S = 0.02
IDLE_POLL_S = 0.2


class Backoff:
    """Poll fast while events flow, slower while nothing happens.

    Polling a file every 20 ms costs little, but on a 2-vCPU host every wake-up
    competes with the workload's threads; when a step takes seconds there is
    nothing to read for seconds.  The interval grows 1.5x per idle poll up to
    ``IDLE_POLL_S`` and drops back at the first new event.
    """

    def __init__(self, fast: float = POLL_S, slow: float = IDLE_POLL_S) -> None:
        self.fast, self.slow, self.interval = fast, slow, fast

    def reset(self) -> None:
        self.interval = self.fast

    def wait(self, active: bool) -> None:
        self.interval = self.fast if active else min(self.slow, self.interval * 1.5)
        time.sleep(self.interval)


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


def follow(path: str, out: IO[bytes], from_seq: int, alive: Callable[[], bool]) -> Optional[str]:
    """Copy events from the log at ``path`` to ``out`` until the ``end`` event.

    The stream always starts with the run's ``hello`` (seq 1), then every event
    with ``seq >= from_seq``: an attaching app gets the handshake and exactly
    the events it does not hold yet.  Returns the end status, or None when the
    supervisor died (``alive()`` turned false) before writing ``end``.
    """
    reader = LineReader(path)
    backoff = Backoff()
    last_look = False
    try:
        while True:
            lines = reader.read_lines()
            for line in lines:
                event = json.loads(line.decode("utf-8"))
                if event.get("seq") == 1 or event.get("seq", 0) >= from_seq:
                    out.write(line + b"\n")
                if event.get("type") == "end":
                    out.flush()
                    return str(event.get("status"))
            if lines:
                out.flush()
                backoff.reset()
                continue
            if last_look:
                return None
            if not alive():
                # Read once more: the supervisor may have written its last lines as it exited.
                last_look = True
                continue
            backoff.wait(active=False)
    finally:
        reader.close()
