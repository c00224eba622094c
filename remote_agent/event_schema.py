"""The shape of every protocol v1 event (DESIGN.md §3), in one table, and the one check that holds a line to it.

``protocol.decode`` runs ``check_event`` on every parsed line, so nothing past decode (the session, the
store, the progress line, the live views, the Result's readers) ever sees a wrong shape.  A line cut by a
full disk, an old agent left on a host, or a hostile host all end here, as a ``ProtocolError`` whose
message names the event and the field, e.g. ``step event #12: dt_s must be a number ≥ 0, got 'fast'``.

Strict on the fields it knows, tolerant of the rest: a field this table does not name may carry any
JSON value that passes the generic limits (nesting depth, sizes, finite numbers, 64-bit integers,
valid Unicode), so a newer agent can add fields that older apps ignore.  Adding a field is one line.

Notation of the table:

- ``"int"`` an integer (never a bool) in SQLite's signed 64-bit range; ``"int+"`` one ≥ 0
- ``"num"`` an int or a finite float; ``"num+"`` one ≥ 0
- ``"time"`` unix seconds between 1970 and 2100 (``T_MIN``..``T_MAX``): every event's ``t``
- ``"bool"``, ``"str"``; ``"obj"`` any object, ``"list"`` any list, ``"any"`` any value
- ``"run_id"`` a run id (letters, digits, ``_ . -``, at most 80)
- a trailing ``?`` also allows null (``"num?"``: a metric that could not be read)
- a tuple: one of these values, e.g. ``("start", "end")``
- a dict: an object with these fields (more allowed); a key starting with ``?`` may be absent;
  the key ``"*"`` types every value of a map, e.g. ``{"*": "str"}``
- a one-item list: a list of that, e.g. ``["num?"]``; ``pair(T)``: a list of exactly two
- ``nullable(S)``: S or null, for a dict or list schema

Shared by the agent and the app: stdlib only, Python 3.8.
"""
from __future__ import annotations

import math
import re
from typing import Any, Dict, List, Optional, Tuple

INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1   # what SQLite stores as an INTEGER
MAX_DEPTH = 32           # objects and lists inside one another (the deepest real event nests about 10)
MAX_ITEMS = 65536        # entries of one object or list (a 192-vCPU sample holds about 200)
MAX_STR = 65536          # characters of one string (free text is cut to 16,000 by the agent's encode)
MAX_KEY = 256            # characters of one field name
# A time is unix seconds from 1970 up to 2100: a clock far past that is no clock (a float like 1e300 passes
# "finite" yet ends time.localtime with OverflowError in every reader that shows a time of day).
T_MIN, T_MAX = 0.0, 4102444800.0  # 1970-01-01, 2100-01-01 (UTC)
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,79}$")
# A lone surrogate can only come from a \uD800-\uDFFF escape (UTF-8 itself cannot carry one).
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Nullable:
    def __init__(self, schema: Any) -> None:
        self.schema = schema


class Pair:
    def __init__(self, item: Any) -> None:
        self.item = item


def nullable(schema: Any) -> Nullable:
    """``schema`` or null (for dict and list schemas; a type name takes a trailing ``?``)."""
    return Nullable(schema)


def pair(item: Any) -> Pair:
    """A list of exactly two ``item`` (an interval, a window of steps)."""
    return Pair(item)


# --------------------------------------------------------------------------- the table
END_STATUSES = ("ok", "failed", "cancelled", "partial")  # partial: a sweep kept its finished points
# Every event: its time, and the tags of a multi-node run's merged stream.
COMMON = {"t": "time", "?node": "int+", "?node_seq": "int+"}

SPEC = {  # a RunSpec as events and Results carry it (RunSpec itself checks the rest where it is rebuilt)
    "?workload": "str?", "?model": "str?", "?model_args": "obj?", "?backend": "str?", "?precision": "str?",
    "?batch_sizes": ["int+"], "?seq_lens": nullable(["int+"]), "?task": "str?", "?steps": "int?",
    "?warmup": "int?", "?duration": "num?", "?min_iters": "int?", "?nproc": "int+", "?nnodes": "int+?",
    "?data": "str?", "?model_file": nullable({"?name": "str?", "?sha256": "str?", "?bytes": "int?"}),
}
ENV = {  # the probe of a host
    "?hostname": "str?", "?os": "str?", "?python": nullable({"?version": "str?", "?executable": "str?"}),
    "?torch": "str?", "?torchvision": "str?", "?timm": "str?", "?torch_xla": "str?", "?torch_neuronx": "str?",
    "?neuronx_cc": "str?", "?cpu": nullable({"?model": "str?", "?count": "int?", "?usable": "int?"}),
    "?mem_bytes": "num?", "?neuron_cores": "int?", "?gpus": "int?", "?instance_type": "str?", "?region": "str?",
    "?devices": nullable([{"?kind": "str?", "?index": "int?", "?name": "str?", "?cores": "int?",
                           "?memory_bytes": "num?", "?processes": nullable([{"?pid": "int?"}])}]),
    "?neuron_venvs": nullable([{"?path": "str?", "?torch_neuronx": "str?"}]),
    "?neuron_stack": "str?", "?neuron_stack_detail": "obj?",  # native / xla / null, and what was found
    "?warnings": nullable(["str"]), "?missing": nullable({"*": "str"}),
}
CHECK = nullable({  # a compiled artefact against the eager model on CPU
    "?agrees": "bool?", "?finite": "bool?", "?max_abs_err": "num?", "?max_rel_err": "num?", "?tolerance": "num?",
    "?precision": "str?", "?what": "str?", "?note": "str?", "?loss": "num?", "?reference_loss": "num?",
})
STOP = {  # how a run with --target-ci stopped (the CLI, the views and the reports word it)
    "?stopped_by": "str?", "?target_ci_pct": "num+?", "?ci_pct": "num+?",
}
TRAIN = {
    "?steps_total": "int?", "?steps_measured": "int?", "?window": nullable(pair("int")), "?world_size": "int?",
    "?global_batch": "int?", "?param_dtype": "str?", "?nodes": "int+?",
    "?data": nullable({"?source": "str?", "?loader_workers": "int?", "?workers_auto": "bool?"}),
    "?compile": nullable({"?seconds": "num?", "?count": "int?", "?steps": nullable(["int"]),
                          "?steps_wall_s": "num?"}),
    "?step_time_s": nullable({"?median": "num?", "?mean": "num?", "?p90": "num?", "?stdev": "num?",
                              "?ci95": nullable(pair("num?"))}),
    "?throughput_samples_per_s": "num?", "?tokens_per_sample": "num?", "?throughput_tokens_per_s": "num?",
    "?check": CHECK, **STOP,
}
INFER_ROW = {
    "batch_size": "int+", "?seq_len": "int+?", "?samples_per_request": "int?", "?compile_s": "num?",
    "?iterations": "int?", "?wall_s": "num?", "?throughput_per_s": "num?", "?tokens_per_s": "num?",
    "?latency_ms": nullable({"?p50": "num?", "?p90": "num?", "?p95": "num?", "?p99": "num?", "?mean": "num?"}),
    "?p99_reliable": "bool?", "?check": CHECK, **STOP,
    "?compile": nullable({"?state": "str?", "?how": "str?", "?measured_by": "str?"}),  # cold / loaded / warm
    "?error": nullable({"?kind": "str?", "?message": "str?"}),  # a point that failed (the run is partial)
}
DISTRIBUTION_MS = nullable({  # llm_figures.distribution_ms
    "?p50": "num?", "?p90": "num?", "?p99": "num?", "?mean": "num?", "?ci95": nullable(pair("num?")), "?n": "int?",
    "?p99_flag": "str?",
})
GENERATE_ROW = {  # one sweep point of the generate workload (remote_agent/summary.summarize_generate)
    "batch_size": "int+", "?input_len": "int+?", "?output_len": "int+?", "?load_s": "num?", "?compile_s": "num?",
    "?first_call_s": "num?", "?warmup_calls": "int?", "?calls": "int?", "?wall_s": "num?",
    "?ttft_ms": DISTRIBUTION_MS, "?tpot_ms": DISTRIBUTION_MS, "?itl_ms": DISTRIBUTION_MS, "?e2e_ms": DISTRIBUTION_MS,
    "?prefill_tok_s": "num?", "?decode_tok_s": "num?", "?output_tok_s": "num?", "?total_tok_s": "num?",
    "?check": CHECK, "?stack": "str?", "?error": nullable({"?kind": "str?", "?message": "str?"}),
}
TELEMETRY = {
    "?sources": nullable(["str"]), "?period_s": "num?", "?samples": "int?", "?missing": nullable({"*": "str"}),
    "?measure": nullable({"?windows": "int?", "?seconds": "num?", "?samples": "int?", "?host_cpu_mean_pct": "num?",
                          "?process_cpu_mean_pct": "num?",
                          "?devices": nullable([{"?index": "int?", "?kind": "str?", "?util_mean_pct": "num?",
                                                 "?util_p95_pct": "num?", "?samples": "int?"}])}),
    "?peak": nullable({"?device_mem_used": "num?", "?host_mem_used": "num?", "?host_mem_total": "num?",
                       "?process_rss": "num?",
                       "?devices": nullable([{"?index": "int?", "?kind": "str?", "?mem_used": "num?",
                                              "?mem_total": "num?"}])}),
}
DIST_MS = nullable({"?p50": "num?", "?p90": "num?", "?p99": "num?", "?mean": "num?", "?n": "int+?"})
SERVE_LEVEL = {  # one load level of the serve workload (remote_agent/llm_figures.serve_summary + where)
    "input_len": "int+", "output_len": "int+", "?concurrency": "int+?", "?rate": "num+?",
    "requests": "int+", "completed": "int+", "errors": "int+", "?ttft_ms": DIST_MS, "?tpot_ms": DIST_MS,
    "?itl_ms": DIST_MS, "?e2e_ms": DIST_MS, "?requests_per_s": "num+?", "?output_tok_s": "num+?",
    "?total_tok_s": "num+?", "?goodput_rps": "num+?", "?slo_met": "bool?", "?stopped_by": "str?",
    # issue 26: the error rate (0..1) an SLO is held to, the load client's own cost, how latency was timed
    "?error_rate": "num+?", "?latency_from": "str?", "?itl_max_ms": DIST_MS, "?warmup_errors": "int+?",
    "?client": nullable({"?cpu_s_per_request": "num+?", "?cpu_s": "num+?", "?cpu_share": "num+?",
                         "?send_lag_ms": nullable({"?p50": "num+?", "?p99": "num+?", "?max": "num+?"})}),
}
SERVE = {
    "?levels": nullable([SERVE_LEVEL]), "?slo": nullable({"*": "num+"}), "?slo_text": "str?", "?slo_unmet": "str?",
    "?goodput_point": "obj?", "?operating_point": "str?", "?server": "obj?",
    "?slo_max_error_rate": "num+?", "?latency_from": "str?", "?itl_rule": "str?", "?slo_preset": "obj?",
}
MODEL = {  # what the agent built: source, class, parameters, inputs, file digest, library versions
    "?source": "str?", "?name": "str?", "?task": "str?", "?class": "str?", "?parameters": "int?",
    "?sha256": "str?", "?config": nullable({"?sha256": "str?"}), "?libraries": nullable({"*": "any"}),
    "?inputs": nullable([{"?name": "str?", "?shape": nullable(["any"]), "?dtype": "str?"}]),
}
RESULT = {  # DESIGN.md §4
    "status": END_STATUSES, "?schema": "str?", "?run_id": "str?", "?host": "str?", "?workload": "str?",
    "?backend": "str?", "?backend_detail": "obj?", "?spec": nullable(SPEC), "?model": nullable(MODEL),
    "?env": nullable(ENV), "?train": nullable(TRAIN), "?infer": nullable([INFER_ROW]), "?cost": "obj?",
    "?generate": nullable([GENERATE_ROW]),
    "?serve": nullable(SERVE),
    "?telemetry": nullable(TELEMETRY), "?warnings": nullable(["str"]),
    "?error": nullable({"?kind": "str?", "?message": "str?", "?detail": "str?"}),
}
SAMPLE_DEVICE = {"?index": "int", "?kind": "str", "?util_pct": "num?", "?mem_used": "num?", "?mem_total": "num?",
                 "?flops": "num?", "?power_w": "num?", "?temp_c": "num?", "?device": "int?"}

EVENT_SCHEMAS: Dict[str, Dict[str, Any]] = {
    "hello": {"agent_version": "str", "protocol_version": "int", "pid": "int", "python": "str",
              "run_id": "run_id?", "?spec": nullable(SPEC)},
    "probe": {"env": ENV},
    "phase": {"name": "str", "state": ("start", "end"), "?batch_size": "int+?", "?seq_len": "int+?",
              "?seconds": "num+", "?concurrency": "int+?", "?rate": "num+?", "?input_len": "int+?",
              "?output_len": "int+?"},
    "step": {"i": "int", "dt_s": "num+", "samples": "num+", "compiled": "bool", "?loss": "num?",
             "?data_s": "num+?", "?tokens": "int+?", "?ci_pct": "num+?"},
    "latency": {"batch_size": "int+", "count": "int+", "p50_ms": "num+", "p90_ms": "num+", "p99_ms": "num+",
                "?seq_len": "int+?", "?ci_pct": "num+?"},
    # generate: one call's figures as it ends (the live view draws TTFT and TPOT per call); throttled to ~20/s
    "gen_call": {"batch_size": "int+", "input_len": "int+", "output_len": "int+",
                 "stage": ("first", "warmup", "measure"), "i": "int+", "?ttft_ms": "num+?", "?tpot_ms": "num+?",
                 "?e2e_ms": "num+?", "?decode_ms": "num+?",
                 "?output_tok_s": "num+?", "?ci_pct": "num+?"},
    "sample": {"host": nullable({"?cpu_pct": "num?", "?cpu_per_core_pct": nullable(["num?"]), "?mem_used": "num?",
                                 "?mem_total": "num?"}),
               "devices": [SAMPLE_DEVICE], "?source": "str?", "?sources": nullable(["str"]), "?period_s": "num?",
               "?runtime": nullable({"?completed": "num?", "?errors": "num?", "?latency_p50_s": "num?",
                                     "?latency_p99_s": "num?", "?errors_by_kind": nullable({"*": "num?"})}),
               "?process": nullable({"?cpu_pct": "num?", "?rss": "num?", "?pids": "int?"}),
               "?processes": nullable([{"?pid": "int?", "?cores": nullable(["int?"]), "?completed": "num?",
                                        "?errors": "num?", "?latency_p50_s": "num?", "?latency_p99_s": "num?",
                                        "?device_mem": "num?", "?host_mem": "num?", "?cpu_pct": "num?",
                                        "?command": "str?", "?run": "bool?"}]),
               "?missing": nullable({"*": "str"})},
    "log": {"level": "str", "message": "str", "?pid": "int?"},
    "serve_level": {"level": SERVE_LEVEL},
    "result": {"result": RESULT},
    "error": {"kind": "str", "message": "str", "?detail": "str?", "?rank": "int?", "?rendezvous": "str?"},
    "end": {"status": END_STATUSES},
}


# --------------------------------------------------------------------------- the check
class SchemaError(ValueError):
    """What is wrong with a value, and where: ``path`` lists the keys and indexes from the event down."""

    def __init__(self, what: str, path: Optional[List[Any]] = None, limit: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.path = path if path is not None else []
        # Which of check_json's limits was passed ("depth", "json" for a value JSON cannot hold), so a caller
        # that checks a value deeper inside an event (a RunSpec's model arguments) can word it for its user.
        self.limit = limit

    def where(self) -> str:
        text = ""
        for part in reversed(self.path):  # collected from the inside out
            text += "[%d]" % part if isinstance(part, int) else ("." if text else "") + str(part)
        return text


def shown(value: Any, limit: int = 40) -> str:
    """A value as a reason quotes it: repr (control characters and surrogates escaped), shortened."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def check_json(value: Any, surrogates: bool = True, depth: int = 0) -> None:
    """The limits every value of an event keeps, known field or not; raises SchemaError.

    ``surrogates``: look for lone surrogates in strings (``check_event`` skips it when the
    raw line holds no ``\\uD8..``-``\\uDF..`` escape, the only way one gets in).
    """
    if value is None or value is True or value is False:
        return
    kind = type(value)
    if kind is str:
        if len(value) > MAX_STR:
            raise SchemaError("is %d characters long, over the %d allowed" % (len(value), MAX_STR))
        if surrogates and _LONE_SURROGATE.search(value):
            raise SchemaError("is not valid Unicode text (a lone surrogate): %s" % shown(value))
    elif kind is int:
        if not INT_MIN <= value <= INT_MAX:
            raise SchemaError("is an integer outside the 64-bit range: %s" % shown(value))
    elif kind is float:
        if not math.isfinite(value):
            raise SchemaError("is %r, not a number (a value that cannot be read is null)" % value)
    elif kind is dict or kind is list:
        if depth >= MAX_DEPTH:
            raise SchemaError("nests deeper than %d levels" % MAX_DEPTH, limit="depth")
        if len(value) > MAX_ITEMS:
            raise SchemaError("holds %d entries, over the %d allowed" % (len(value), MAX_ITEMS))
        items = value.items() if kind is dict else enumerate(value)
        for key, item in items:
            if kind is dict and (len(key) > MAX_KEY or (surrogates and _LONE_SURROGATE.search(key))):
                raise SchemaError("has a field name that is too long or not valid text: %s" % shown(key))
            try:
                check_json(item, surrogates, depth + 1)
            except SchemaError as exc:
                exc.path.append(key)
                raise
    else:  # json.loads makes nothing else; a caller handing us objects is a bug, refused all the same
        raise SchemaError("is a %s, not a JSON value" % kind.__name__, limit="json")


_SIMPLE = {
    "int": lambda v: type(v) is int,
    "int+": lambda v: type(v) is int and v >= 0,
    "num": lambda v: type(v) is int or type(v) is float,
    "num+": lambda v: (type(v) is int or type(v) is float) and v >= 0,
    "bool": lambda v: type(v) is bool,
    "str": lambda v: type(v) is str,
    "obj": lambda v: type(v) is dict,
    "list": lambda v: type(v) is list,
    "any": lambda v: True,
    "run_id": lambda v: type(v) is str and RUN_ID.match(v) is not None and ".." not in v,
    "time": lambda v: (type(v) is int or type(v) is float) and T_MIN <= v < T_MAX,
}
_NAMES = {"int": "an integer", "int+": "an integer ≥ 0", "num": "a number", "num+": "a number ≥ 0",
          "bool": "true or false", "str": "a string", "obj": "an object", "list": "a list", "any": "a value",
          "run_id": "a run id (letters, digits, _ . - only, at most 80)",
          "time": "a number of unix seconds between 1970 and 2100"}


def _check(value: Any, schema: Any) -> None:
    """``value`` against one schema of the notation above; raises SchemaError."""
    if isinstance(schema, str):
        name, optional = (schema[:-1], True) if schema.endswith("?") else (schema, False)
        if value is None and optional:
            return
        if not _SIMPLE[name](value):
            raise SchemaError("must be %s%s, got %s" % (_NAMES[name], " or null" if optional else "", shown(value)))
    elif isinstance(schema, tuple):
        if type(value) is not str or value not in schema:
            raise SchemaError("must be one of %s, got %s" % (", ".join(schema), shown(value)))
    elif isinstance(schema, Nullable):
        if value is not None:
            _check(value, schema.schema)
    elif isinstance(schema, Pair):
        if type(value) is not list or len(value) != 2:
            raise SchemaError("must be a list of two, got %s" % shown(value))
        _items(value, schema.item)
    elif isinstance(schema, list):
        if type(value) is not list:
            raise SchemaError("must be a list, got %s" % shown(value))
        _items(value, schema[0])
    else:
        _fields(value, schema)


def _items(value: List[Any], schema: Any) -> None:
    for index, item in enumerate(value):
        try:
            _check(item, schema)
        except SchemaError as exc:
            exc.path.append(index)
            raise


def _fields(value: Any, schema: Dict[str, Any]) -> None:
    if type(value) is not dict:
        raise SchemaError("must be an object, got %s" % shown(value))
    missing = [key for key in schema if key[0] not in "?*" and key not in value]
    if missing:
        raise SchemaError("lacks %s" % ", ".join(missing))
    every = schema.get("*")
    for key, field_schema in schema.items():
        name = key[1:] if key.startswith("?") else key
        if key == "*" or name not in value:
            continue
        try:
            _check(value[name], field_schema)
        except SchemaError as exc:
            exc.path.append(name)
            raise
    if every is not None:
        for name, item in value.items():
            try:
                _check(item, every)
            except SchemaError as exc:
                exc.path.append(name)
                raise


def check_event(event: Any, line: Optional[bytes] = None) -> Tuple[str, int]:
    """Hold one parsed line to protocol v1; returns (type, seq) or raises SchemaError with the reason.

    ``line``: the raw line it came from, if known (only to skip the surrogate search when it holds
    no ``\\uD8..``-``\\uDF..`` escape).
    """
    if type(event) is not dict:
        raise SchemaError("an event must be a JSON object, got %s" % type(event).__name__)
    version = event.get("v")
    if type(version) is not int or version != 1:
        raise SchemaError("protocol version %s, this side speaks 1" % shown(version))
    seq = event.get("seq")
    if type(seq) is not int or not 1 <= seq <= INT_MAX:
        raise SchemaError("seq must be a positive integer, got %s" % shown(seq))
    type_ = event.get("type")
    schema = EVENT_SCHEMAS.get(type_) if type(type_) is str else None
    if schema is None:
        raise SchemaError("event #%d: unknown event type %s" % (seq, shown(type_)))
    label = "%s event #%d" % (type_, seq)
    try:
        check_json(event, surrogates=line is None or _SURROGATE_ESCAPE.search(line) is not None)
        _fields(event, COMMON)
        _fields(event, schema)
    except SchemaError as exc:
        where = exc.where()
        raise SchemaError("%s: %s%s" % (label, where + " " if where else "", exc.what)) from None
    return type_, seq
