"""Protocol v1: the one wire format between the agent and the app (DESIGN.md §3).

The agent writes JSON Lines on stdout, one event per line, at most
``MAX_LINE_BYTES`` a line.  Every event carries ``v``, ``seq`` (1, 2, 3, ...
strictly increasing within a run), ``t`` (unix seconds) and ``type``.

This module is imported by both sides, so it is stdlib-only and Python 3.8
compatible.  The run specification the app sends on the agent's stdin is part
of the wire format too: it lives in ``run_spec`` (the dataclasses),
``spec_values`` (what each field may hold) and ``spec_checks`` (the checks),
and its names are imported here, so that ``remote_agent.protocol`` stays the
one module the app's UI reads of the agent (pyproject's import-linter).
"""
from __future__ import annotations

import json
import math
import re
import time
from typing import Any, Dict, Iterable, Optional

from remote_agent.event_schema import EVENT_SCHEMAS, SchemaError, check_event
from remote_agent.run_spec import NodePlacement, RunSpec, parse_run_request
from remote_agent.spec_values import (
    BACKENDS,
    DATA_SOURCES,
    DEFAULT_INPUT_LEN,
    DEFAULT_MODEL,
    DEFAULT_OUTPUT_LEN,
    DEFAULT_SERVE_MODEL,
    MAX_CONCURRENCY,
    MAX_NODES,
    MAX_SEQ_LEN,
    NEURON_MODES,
    NEURON_STACKS,
    P99_MIN_REQUESTS,
    PRECISIONS,
    RENDEZVOUS_TIMEOUT_S,
    SERVERS,
    TARGET_CI_MAX_PCT,
    TARGET_CI_MIN_STEPS,
    TELEMETRY_MAX_PERIOD_S,
    TELEMETRY_MIN_PERIOD_S,
    TELEMETRY_PERIOD_S,
    WORKLOADS,
    SpecError,
    check_telemetry_period,
)

# The wire format's own names, and the run spec's (run_spec, spec_values) that travel in it.
__all__ = [
    "BACKENDS",
    "DATA_SOURCES",
    "DEFAULT_INPUT_LEN",
    "DEFAULT_MODEL",
    "DEFAULT_OUTPUT_LEN",
    "DEFAULT_SERVE_MODEL",
    "END_STATUSES",
    "ERROR_KINDS",
    "EVENT_TYPES",
    "MAX_CONCURRENCY",
    "MAX_DETAIL_CHARS",
    "MAX_LINE_BYTES",
    "MAX_NODES",
    "MAX_SEQ_LEN",
    "NEURON_MODES",
    "NEURON_STACKS",
    "P99_MIN_REQUESTS",
    "PHASES",
    "PRECISIONS",
    "PROTOCOL_VERSION",
    "RENDEZVOUS_TIMEOUT_S",
    "RUN_ID_PATTERN",
    "SERVERS",
    "TARGET_CI_MAX_PCT",
    "TARGET_CI_MIN_STEPS",
    "TELEMETRY_MAX_PERIOD_S",
    "TELEMETRY_MIN_PERIOD_S",
    "TELEMETRY_PERIOD_S",
    "WORKLOADS",
    "NodePlacement",
    "ProtocolError",
    "RunSpec",
    "SeqTracker",
    "SpecError",
    "check_run_id",
    "check_telemetry_period",
    "decode",
    "encode",
    "finite",
    "iter_events",
    "make_event",
    "new_run_id",
    "parse_run_request",
]

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 1 << 20
# Long free text (tracebacks, stderr tails) is capped well below the line cap so
# that one event never has to be cut in the middle of its structure.
MAX_DETAIL_CHARS = 16000

PHASES = ("setup", "compile", "warmup", "measure", "teardown")
ERROR_KINDS = ("bad_spec", "backend_unavailable", "compile_failed", "oom", "runtime", "internal")
END_STATUSES = ("ok", "failed", "cancelled", "partial")

# Every event type's fields, in one table: remote_agent/event_schema.py (decode holds each line to it).
EVENT_TYPES = tuple(EVENT_SCHEMAS)


RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,79}$")


def new_run_id() -> str:
    """Sortable and unique: UTC time plus 6 random hex digits."""
    import secrets  # here, not at the top: every agent start imports this module, few make run ids

    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def check_run_id(run_id: str) -> str:
    """A run id becomes a directory name on the host: no separators, no dot-dot."""
    if not RUN_ID_PATTERN.match(run_id or "") or ".." in run_id:
        raise ValueError("run id %r is not valid (letters, digits, _ . - only, at most 80)" % (run_id,))
    return run_id


class ProtocolError(ValueError):
    """A line that is not a valid protocol v1 event, or an out-of-order stream."""


def finite(value: Any) -> Any:
    """NaN and infinity are not JSON: a metric that is not a number is missing (null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def make_event(type_: str, seq: int, t: Optional[float] = None, **payload: Any) -> Dict[str, Any]:
    """Build an event dict with the common header fields first."""
    if type_ not in EVENT_SCHEMAS:
        raise ProtocolError("unknown event type %r" % (type_,))
    event = {"v": PROTOCOL_VERSION, "seq": seq, "t": time.time() if t is None else t, "type": type_}
    event.update(payload)
    return event


def _cap_text(event: Dict[str, Any], limit: int) -> Dict[str, Any]:
    """Shorten the free-text fields of an event, keeping their ends (where errors are)."""
    capped = dict(event)
    for key in ("detail", "message"):
        value = capped.get(key)
        if isinstance(value, str) and len(value) > limit:
            capped[key] = "[... %d characters cut ...]\n" % (len(value) - limit) + value[-limit:]
    return capped


def encode(event: Dict[str, Any]) -> bytes:
    """Serialise one event to a UTF-8 line ending in ``\\n``.

    Free text is cut to ``MAX_DETAIL_CHARS`` (keeping the tail, where a traceback
    ends).  An event that is still larger than the line cap is a bug in the
    caller and raises ``ProtocolError`` rather than being silently mangled.
    """
    line = json.dumps(finite(_cap_text(event, MAX_DETAIL_CHARS)), ensure_ascii=False,
                      separators=(",", ":"), allow_nan=False)
    data = (line + "\n").encode("utf-8")
    if len(data) > MAX_LINE_BYTES:
        raise ProtocolError("event %s #%s is %d bytes, over the %d-byte line cap"
                            % (event.get("type"), event.get("seq"), len(data), MAX_LINE_BYTES))
    return data


def decode(line: Any) -> Dict[str, Any]:
    """Parse one line and hold it to its type's schema (``event_schema``).

    Raises ``ProtocolError`` with the reason for anything else: a line that is not
    JSON (cut by a full disk, say), nests too deep, or carries a field of the wrong
    type, a NaN, an integer past 64 bits or a lone surrogate.  The caller decides
    whether a refused line ends the stream (``EventStream`` goes on past it).
    """
    if isinstance(line, str):
        line = line.encode("utf-8", "surrogatepass")  # a lone surrogate then fails as invalid UTF-8, below
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError("line of %d bytes exceeds the %d-byte cap" % (len(line), MAX_LINE_BYTES))
    try:
        event = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        snippet = line[:120].decode("utf-8", "replace").rstrip()
        raise ProtocolError("not a JSON event: %s (line starts %r)" % (exc, snippet)) from None
    except RecursionError:
        raise ProtocolError("not a JSON event: it nests deeper than this reader follows") from None
    try:
        check_event(event, line)
    except SchemaError as exc:
        raise ProtocolError(str(exc)) from None
    return event


class SeqTracker:
    """Checks that a stream's ``seq`` strictly increases and that ``hello`` comes first."""

    def __init__(self) -> None:
        self.last_seq = 0
        self.saw_hello = False

    def check(self, event: Dict[str, Any]) -> None:
        if not self.saw_hello:
            if event["type"] != "hello":
                raise ProtocolError("the first event must be hello, got %s" % event["type"])
            self.saw_hello = True
        elif event["seq"] <= self.last_seq:
            raise ProtocolError("seq went from %d to %d" % (self.last_seq, event["seq"]))
        self.last_seq = event["seq"]


def iter_events(lines: Iterable[Any]) -> Iterable[Dict[str, Any]]:
    """Decode a stream of lines, checking hello-first and strictly increasing seq."""
    tracker = SeqTracker()
    for line in lines:
        if not line.strip():
            continue
        event = decode(line)
        tracker.check(event)
        yield event
