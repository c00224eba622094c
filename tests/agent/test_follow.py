"""Following a run's log: the replay rules that make attach lose nothing and repeat nothing."""
from __future__ import annotations

import io
import json
import threading
import time

from remote_agent.eventlog import EventLog
from remote_agent.follow import follow
from remote_agent.protocol import iter_events

HELLO = {"agent_version": "0", "protocol_version": 1, "pid": 1, "python": "3.8", "run_id": "r"}


def _write_run(path, count: int, end: bool = True) -> None:
    log = EventLog.open(str(path))
    log.emit("hello", **HELLO)
    for i in range(count):
        log.emit("log", level="info", message=f"line {i}")
    if end:
        log.emit("end", status="ok")
    log.close()


def test_attach_from_a_seq_replays_hello_then_only_newer_events(tmp_path):
    path = tmp_path / "events.jsonl"
    _write_run(path, 10)
    out = io.BytesIO()
    assert follow(str(path), out, from_seq=8, alive=lambda: True) == "ok"
    events = list(iter_events(out.getvalue().splitlines()))
    assert [e["seq"] for e in events] == [1, 8, 9, 10, 11, 12]


def test_follow_waits_for_events_written_later_and_for_half_written_lines(tmp_path):
    path = tmp_path / "events.jsonl"
    out = io.BytesIO()

    def writer() -> None:
        time.sleep(0.1)
        with open(path, "ab", buffering=0) as handle:
            line = json.dumps({"v": 1, "seq": 1, "t": 1.0, "type": "hello", **HELLO}).encode() + b"\n"
            handle.write(line[:10])  # a writer caught mid-line
            time.sleep(0.1)
            handle.write(line[10:])
            handle.write(json.dumps({"v": 1, "seq": 2, "t": 2.0, "type": "end", "status": "ok"}).encode() + b"\n")

    thread = threading.Thread(target=writer)
    thread.start()
    assert follow(str(path), out, 1, alive=lambda: True) == "ok"
    thread.join()
    assert [e["type"] for e in iter_events(out.getvalue().splitlines())] == ["hello", "end"]


def test_a_dead_supervisor_without_end_is_reported_after_the_last_line(tmp_path):
    path = tmp_path / "events.jsonl"
    _write_run(path, 3, end=False)
    out = io.BytesIO()
    assert follow(str(path), out, 1, alive=lambda: False) is None
    assert len(out.getvalue().splitlines()) == 4  # everything that was written still reached the app
