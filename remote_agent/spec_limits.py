"""What a RunSpec may hold so that every event that carries it passes the event schema.

The hello and the Result carry the spec (``RunSpec.to_event_dict``), and the app holds each event to
``event_schema``'s generic limits (64-bit integers, string lengths, entries, nesting depth).  A spec past
them would start on its host and then have its own hello refused: the run goes on with nobody following
it.  So the spec is held to the same limits, counted from where it sits in the deepest event that carries
it, before anything starts, with one sentence per field.  The limits themselves live in event_schema only.

Shared by the agent and the app: stdlib only, Python 3.8.
"""
from __future__ import annotations

from typing import Any, Dict, Iterator, Optional, Tuple

from remote_agent.event_schema import EVENT_SCHEMAS, MAX_DEPTH, SPEC, Nullable, Pair, SchemaError, check_json, shown


def _depths(schema: Any, depth: int) -> Iterator[int]:
    """The depths at which ``SPEC`` sits inside ``schema`` (itself at ``depth``)."""
    if isinstance(schema, Nullable):
        schema = schema.schema
    if schema is SPEC:
        yield depth
    elif isinstance(schema, dict):
        for value in schema.values():
            yield from _depths(value, depth + 1)
    elif isinstance(schema, list):
        yield from _depths(schema[0], depth + 1)
    elif isinstance(schema, Pair):
        yield from _depths(schema.item, depth + 1)


# A spec field's value sits one level below the spec, in the event that nests the spec deepest
# (today a Result event: event → result → spec → field).
FIELD_DEPTH = max(d for schema in EVENT_SCHEMAS.values() for d in _depths(schema, 0)) + 1
MODEL_ARG_DEPTH = FIELD_DEPTH + 1          # model_args → one argument's value
MODEL_ARG_LEVELS = MAX_DEPTH - MODEL_ARG_DEPTH  # lists one model argument may nest


def _event_form(name: str, value: Any) -> Any:
    """A field as the events carry it: tuples as lists, a model file without its text (it stays on the host)."""
    if isinstance(value, tuple):
        return list(value)
    if name == "model_file" and isinstance(value, dict):
        return {k: v for k, v in value.items() if k != "text"}
    return value


def wire_problem(values: Dict[str, Any]) -> Optional[Tuple[str, str]]:
    """``(field, sentence)`` for the first field whose value the events could not carry, or None.

    A value JSON cannot hold at all (a set, an object) is left to the field's own type check.
    """
    for name, value in values.items():
        if name == "model_args" and isinstance(value, dict):
            items = [("model argument %s" % (key if str(key).isidentifier() else shown(key)), item, MODEL_ARG_DEPTH)
                     for key, item in value.items()]
        else:
            items = [(name.replace("_", " "), _event_form(name, value), FIELD_DEPTH)]
        for label, item, depth in items:
            try:
                check_json(item, depth=depth)
            except SchemaError as exc:
                if exc.limit == "json":
                    continue
                if isinstance(value, tuple) and exc.path:  # one of the sizes: "batch size ..." says which
                    label, exc.path = label[:-1], []
                return name, _sentence(label, exc, depth)
    return None


def _sentence(label: str, exc: SchemaError, depth: int) -> str:
    if exc.limit == "depth":  # the schema counts from the event; the user counts from the value they typed
        return "%s nests deeper than the %d levels a run's events can carry" % (label, MAX_DEPTH - depth)
    where = exc.where()
    label = "%s%s%s" % (label, "" if where.startswith("[") or not where else " ", where)
    return "%s %s; a run's events cannot carry it" % (label, exc.what)
