"""Protocol v1: encode/decode round trips, the line cap, and stream order rules."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from remote_agent.eventlog import EventLog
from remote_agent.protocol import (
    MAX_DETAIL_CHARS,
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
    ProtocolError,
    SeqTracker,
    check_run_id,
    decode,
    encode,
    iter_events,
    make_event,
)

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**53, 2**53),
                         st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=50))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=10), inner, max_size=5)), max_leaves=20)


@given(payload=st.dictionaries(st.text(min_size=1, max_size=12).filter(
    lambda k: k not in ("v", "seq", "t", "type", "level", "message")), json_values, max_size=6),
    seq=st.integers(1, 2**40), message=st.text(max_size=200))
def test_any_log_event_survives_a_round_trip(payload, seq, message):
    event = make_event("log", seq, t=1700000000.25, level="info", message=message, **payload)
    line = encode(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1  # one event, one line, whatever the text holds
    assert decode(line) == json.loads(json.dumps(event))


def test_every_event_carries_the_header():
    event = decode(encode(make_event("end", 7, status="ok")))
    assert event["v"] == PROTOCOL_VERSION and event["seq"] == 7 and event["type"] == "end"
    assert isinstance(event["t"], float)


def test_nan_metrics_travel_as_null_not_as_invalid_json():
    line = encode(make_event("step", 3, i=3, dt_s=0.1, samples=8, compiled=False, loss=float("nan")))
    assert decode(line)["loss"] is None


def test_long_tracebacks_are_cut_keeping_their_end():
    detail = "frame\n" * 100000 + "ValueError: the real reason"
    event = decode(encode(make_event("error", 2, kind="runtime", message="boom", detail=detail)))
    assert event["detail"].endswith("ValueError: the real reason")
    assert len(event["detail"]) < MAX_DETAIL_CHARS + 100
    assert "characters cut" in event["detail"]


def test_an_event_over_the_line_cap_is_refused_not_mangled():
    huge = {"values": ["x" * 1000] * (MAX_LINE_BYTES // 1000 + 10)}
    with pytest.raises(ProtocolError, match="line cap"):
        encode(make_event("result", 5, result=huge))


@pytest.mark.parametrize("line, reason", [
    (b"not json", "not a JSON event"),
    (b"[1, 2]", "must be a JSON object"),
    (b'{"v": 2, "seq": 1, "t": 0, "type": "end", "status": "ok"}', "protocol version 2"),
    (b'{"v": 1, "seq": 0, "t": 0, "type": "end", "status": "ok"}', "seq must be a positive integer"),
    (b'{"v": 1, "seq": true, "t": 0, "type": "end", "status": "ok"}', "seq must be a positive integer"),
    (b'{"v": 1, "seq": 1, "t": "now", "type": "end", "status": "ok"}', "t must be a number"),
    # A finite time no clock can show (time.localtime(1e300) raises OverflowError): held to 1970..2100.
    (b'{"v": 1, "seq": 1, "t": 1e300, "type": "end", "status": "ok"}',
     r"end event #1: t must be a number of unix seconds between 1970 and 2100, got 1e\+300"),
    (b'{"v": 1, "seq": 1, "t": 4102444800, "type": "end", "status": "ok"}', "between 1970 and 2100, got 4102444800"),
    (b'{"v": 1, "seq": 1, "t": -0.5, "type": "end", "status": "ok"}', "between 1970 and 2100, got -0.5"),
    (b'{"v": 1, "seq": 1, "type": "end", "status": "ok"}', "end event #1: lacks t"),
    (b'{"v": 1, "seq": 1, "t": 0, "type": "shout"}', "unknown event type"),
    (b'{"v": 1, "seq": 1, "t": 0, "type": "step", "i": 1}', "lacks dt_s, samples, compiled"),
    (b"\xff\xfe", "not a JSON event"),
])
def test_malformed_lines_are_rejected_with_the_reason(line, reason):
    with pytest.raises(ProtocolError, match=reason):
        decode(line)


def test_a_line_over_the_cap_is_rejected_before_parsing():
    with pytest.raises(ProtocolError, match="exceeds"):
        decode(b"x" * (MAX_LINE_BYTES + 1))


def _stream(*types_and_seqs):
    return [encode(make_event(t, s, **fields)) for t, s, fields in types_and_seqs]


HELLO = {"agent_version": "0", "protocol_version": 1, "pid": 1, "python": "3.8", "run_id": "r"}


def test_a_stream_must_start_with_hello():
    with pytest.raises(ProtocolError, match="first event must be hello"):
        list(iter_events(_stream(("end", 1, {"status": "ok"}))))


def test_seq_must_strictly_increase():
    lines = _stream(("hello", 1, HELLO), ("log", 2, {"level": "info", "message": "a"}),
                    ("log", 2, {"level": "info", "message": "again"}))
    with pytest.raises(ProtocolError, match="seq went from 2 to 2"):
        list(iter_events(lines))


def test_gaps_in_seq_are_allowed_for_attach_from_a_later_seq():
    tracker = SeqTracker()
    for seq, type_ in ((1, "hello"), (40, "log"), (41, "end")):
        tracker.check({"seq": seq, "type": type_})
    assert tracker.last_seq == 41


def test_event_log_numbers_events_from_one(tmp_path):
    path = tmp_path / "events.jsonl"
    log = EventLog.open(str(path))
    log.emit("hello", **HELLO)
    log.emit("log", level="info", message="x")
    log.emit("end", status="ok")
    log.close()
    events = list(iter_events(path.read_bytes().splitlines()))
    assert [e["seq"] for e in events] == [1, 2, 3]
    assert [e["type"] for e in events] == ["hello", "log", "end"]


@pytest.mark.parametrize("run_id", ["../etc", "a/b", "", "..", "x" * 81, "-rf", "a b", "a;b"])
def test_run_ids_cannot_escape_the_runs_directory(run_id):
    with pytest.raises(ValueError):
        check_run_id(run_id)
