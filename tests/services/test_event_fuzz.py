"""Malformed agent lines through the real reading path: nothing escapes, nothing good after a bad line is lost.

Each example takes a real recorded run (tests/data/runs), mutates some of its lines the way a cut log,
an old agent or a hostile host would (a field of the wrong type, NaN, an integer past 64 bits, a lone
surrogate, deep nesting, a list as ``type``, a line cut short, garbage bytes) and feeds the lines through
what ``neuronbench run`` does with a host's stdout: decode and SeqTracker in ``RunSession``/``EventStream``,
the recorder and the run store, the CLI's progress printer, the app's live-view model, then the Result's
cost, summary and ``runs show`` text.  The oracle is protocol v1 itself: a line ``decode`` refuses is
left out and the stream goes on; only an event out of order may end it.
"""
from __future__ import annotations

import io
import itertools
import json
import math
import random
import traceback
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PySide6.QtCore import Qt

from app.cli.monitor_cmd import screen_lines
from app.cli.progress import ProgressPrinter
from app.cli.runs_text import format_run_detail, format_run_list
from app.cli.text import format_env, format_result
from app.core.compare import CompareError, compare_runs
from app.core.cost import apply_cost
from app.core.decision import summary
from app.core.errors import NeuronBenchError
from app.core.results import aggregate_repeats
from app.core.runrecord import StoredRun
from app.core.telemetry import downsample, utilisation_series
from app.paths import AppPaths
from app.reports.model import RunMaterial, build_report
from app.services.pricing import load_pricebook
from app.services.recorder import RunRecorder
from app.services.session import RunSession
from app.services.store import RunStore
from app.services.transport import AgentProcess, Transport
from app.ui.models.run_state import LiveRunState
from app.ui.models.runs_table import COLUMNS, RunsTableModel
from remote_agent.capacity import nproc_problem
from remote_agent.protocol import ProtocolError, RunSpec, SeqTracker, decode
from tests.conftest import DATA

RUNS = ("train-cpu-tiny", "train-xla-tiny", "infer-cpu-tiny", "infer-hf-tiny-bert-sweep",
        "h100-train-nproc2-on-1-gpu-failed", "train-cpu-2vcpu-telemetry")
RECORDED = {name: [json.loads(line) for line in (DATA / "runs" / f"{name}.events.jsonl").read_text().splitlines()
                   if line.strip()] for name in RUNS}
_ids = itertools.count(1)


class LinesProcess(AgentProcess):
    """An agent command whose stdout is the given lines (the agent's own log, as a host would stream it)."""

    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines

    def lines(self):
        yield from self._lines

    def wait(self, timeout=None):
        return 0

    def stderr_text(self) -> str:
        return ""

    def kill(self) -> None:
        pass


class LinesTransport(Transport):
    def __init__(self, lines: list[bytes]) -> None:
        self.host = "fuzzed"
        self._lines = lines

    def start(self, args, stdin=None):
        return LinesProcess(self._lines)


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# Values a field may be given: each is JSON text, spliced into the line as it would arrive.
HOSTILE_VALUES = [
    "NaN", "Infinity", "-Infinity", "1e999", str(2 ** 64), str(-(2 ** 70)), "1" * 400, '"\\ud800"', '"a\\udcffb"',
    '"\\u001b[2J\\u0007\\r"', json.dumps("x" * 70_000), "[]", "{}", "[1, 2]", '{"a": 1}', "null", "true", "0",
    "-1", "1.5", '""', '"end"', '"step"', nested(40), nested(3000), '{"k": ' * 50 + "0" + "}" * 50,
    # Finite numbers no clock can show as a time (a time of day, a date): the end of the old progress line.
    "1e300", "-1e300", "1e18", str(2 ** 62), "4102444800", "253402300800", "-0.0", "5e-324",
]
HOSTILE = st.sampled_from(HOSTILE_VALUES)


def paths_of(value, prefix=(), depth=0):
    """Every (key, key, ...) path to a value inside an event, down to 4 levels below ``depth``."""
    if depth > 4:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items)[:40]:
        yield (*prefix, key)
        yield from paths_of(item, (*prefix, key), depth + 1)


PLACEHOLDER = "__FUZZ_VALUE__"


@st.composite
def mutated_line(draw, event: dict) -> bytes:
    """One mutation of a real event, as the raw line the app would read."""
    event = json.loads(json.dumps(event))
    kind = draw(st.sampled_from(["set", "set", "set", "delete", "type", "cut", "garbage"]))
    line = json.dumps(event, separators=(",", ":"))
    if kind == "cut":  # a log cut short by a full disk or a crash mid-write
        return line.encode()[: draw(st.integers(1, max(1, len(line) - 1)))]
    if kind == "garbage":
        return draw(st.binary(min_size=1, max_size=60)).replace(b"\n", b" ")
    paths = list(paths_of(event))
    path = ("type",) if kind == "type" else draw(st.sampled_from(paths))
    parent = event
    for key in path[:-1]:
        parent = parent[key]
    if kind == "delete":
        del parent[path[-1]]
        return json.dumps(event).encode()
    parent[path[-1]] = PLACEHOLDER
    return json.dumps(event).replace(json.dumps(PLACEHOLDER), draw(HOSTILE), 1).encode()


@st.composite
def fuzzed_run(draw):
    """(run id, spec, lines, which lines were mutated): a recorded run, some of its lines replaced."""
    events = RECORDED[draw(st.sampled_from(RUNS))]
    run_id = f"fuzz-{next(_ids)}"
    at = next(i for i, e in enumerate(events) if e["type"] == "result")
    result = dict(events[at], result=dict(events[at]["result"], run_id=run_id))
    hello, middle, closing = events[0], events[1:at], [result, *events[at + 1:]]
    start = draw(st.integers(0, max(0, len(middle) - 30)))
    chosen = [dict(hello, run_id=run_id), *middle[start:start + 30], *closing]
    spec = RunSpec.from_dict({k: v for k, v in result["result"]["spec"].items() if k in RunSpec.field_help()})
    lines = [json.dumps(e, separators=(",", ":")).encode() for e in chosen]
    bad = draw(st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=6))
    for index in bad:
        lines[index] = draw(mutated_line(chosen[index]))
    return run_id, spec, lines, bad


def expected_stream(lines: list[bytes], run_id: str) -> tuple[list[int], int]:
    """(the seqs a correct reader stores, the lines it refuses): protocol v1 applied line by line."""
    tracker, stored, refused = SeqTracker(), [], 0
    for line in lines:
        if not line.strip():
            continue  # blank lines are no events
        try:
            event = decode(line)
        except ProtocolError:
            refused += 1
            continue
        try:
            tracker.check(event)
        except ProtocolError:
            break  # an event out of order may end the stream
        if event["type"] == "hello" and event["run_id"] != run_id:
            break  # an agent answering for another run: nothing of it is kept
        stored.append(event["seq"])
    return stored, refused


SAFE = set("\n")


def assert_printable(text: str) -> None:
    if text.replace("\n", "").isprintable():  # the common case, in C (a surrogate is never printable)
        return
    bad = {c for c in text if (not c.isprintable() and c not in SAFE) or 0xD800 <= ord(c) <= 0xDFFF}
    assert not bad, f"raw control characters reach the terminal: {bad!r}"


@pytest.fixture
def store(tmp_path):
    """One run store for every example (a run each): opening and closing one per example is most of the time."""
    with RunStore(AppPaths.resolve(str(tmp_path)).runs_db) as store:
        yield store


BOOK = load_pricebook(None)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=fuzzed_run())
def test_malformed_lines_are_refused_and_every_good_event_is_kept(store, case):
    run_id, spec, lines, _bad = case
    progress = io.StringIO()
    printer = ProgressPrinter("fuzzed", spec, stream=progress)
    view = LiveRunState("fuzzed", spec)
    recorder = RunRecorder.start(store, BOOK, "fuzzed", spec, run_id)

    def on_event(event):
        recorder(event)
        printer(event)
        view.apply(event)

    session = RunSession(LinesTransport(lines), spec, run_id=run_id, on_event=on_event, on_notice=printer.note)
    try:
        result = recorder.finish(session.run())
    except NeuronBenchError as exc:  # a stream without its end or out of order: one sentence, a failed run
        result = recorder.fail(exc)
    stored_run = store.load(run_id)
    stored = [e["seq"] for e in store.events(run_id)]
    summary = format_result(result)
    detail = format_run_detail(stored_run, len(store.telemetry(run_id)), format_result(stored_run.result))
    listing = format_run_list([stored_run])

    want_stored, want_refused = expected_stream(lines, run_id)
    assert recorder.failed is None, recorder.failed  # the store took every event it was given
    assert stored == want_stored
    assert session.refused.count == want_refused
    if want_refused:
        assert (result.get("events_refused") or {}).get("count") == want_refused
        assert f"{want_refused:,} event(s) from the agent" in summary
    for text in (progress.getvalue(), summary, detail, listing):
        assert_printable(text)
    assert math.isfinite(view.progress.fraction)


EVERY_EVENT = [event for name in RUNS for event in RECORDED[name]] + \
    [json.loads(line) for name in ("samples-trn1-2xlarge", "samples-trn1-32xlarge")
     for line in (DATA / "runs" / f"{name}.jsonl").read_text().splitlines() if line.strip()]
TRAIN_SPEC = RunSpec(workload="train", steps=40, warmup=5, batch_sizes=(8,))
INFER_SPEC = RunSpec(workload="infer", batch_sizes=(1, 4), duration=2.0)


def stored_run(result: dict, run_id: str, started_at: float | None = None,
               ended_at: float | None = None) -> StoredRun:
    return StoredRun(run_id=run_id, host=str(result.get("host")), status=result["status"],
                     spec=result.get("spec") or {}, created_at=0.0, env=result.get("env"), result=result,
                     started_at=started_at, ended_at=ended_at)


def read_everywhere(event: dict, original: dict, specs=(TRAIN_SPEC, INFER_SPEC)) -> None:
    """``event`` through every reader of its type: progress, the live view, telemetry, cost, summaries, compare."""
    for spec in specs:
        printer = ProgressPrinter("fuzzed", spec, stream=io.StringIO())
        printer(event)
        assert_printable(printer.stream.getvalue())
        LiveRunState("fuzzed", spec).apply(event)
    read_by_type(event, original)


def read_by_type(event: dict, original: dict) -> None:
    """The readers of one type of event past the progress line and the live view: the monitor screen,
    telemetry, the host's environment, cost, the run's summaries and History row, compare and the report."""
    if event["type"] == "sample":
        for width in (100, 40):
            assert_printable("\n".join(screen_lines(event, "fuzzed", width)))
        utilisation_series(downsample([event, original]))
    elif event["type"] == "probe":
        assert_printable(format_env("fuzzed", event["env"]))
        nproc_problem("train", "auto", 2, event["env"])
        apply_cost({"env": event["env"], "workload": "train"}, BOOK)
    elif event["type"] == "result":
        result = dict(event["result"], host="fuzzed")
        apply_cost(result, BOOK)
        assert_printable(format_result(result))
        aggregate_repeats([result, result])
        read_stored(stored_run(result, "a"), stored_run(dict(original["result"], host="b"), "b"))


def read_stored(run: StoredRun, other: StoredRun) -> None:
    """A stored run as History, `runs show`, compare and the report read it (its times come from events' t)."""
    assert_printable(format_run_detail(run, 0, None) + format_run_list([run]))
    history = RunsTableModel()  # History's rows as the view reads them: each cell's text and tooltip
    history.set_runs([run])
    for column in range(len(COLUMNS)):
        index = history.index(0, column)
        assert_printable(history.data(index) + (history.data(index, Qt.ItemDataRole.ToolTipRole) or ""))
    try:
        doc = compare_runs([run, other], BOOK)
    except CompareError:
        return  # e.g. no run has a figure to compare: one sentence (reporting.py turns it into the CLI's)
    summary(doc)
    json.dumps(build_report([RunMaterial(run), RunMaterial(other)], doc, "fuzz", run.ended_at or 0.0, []))


def test_a_backend_and_neuron_options_with_control_characters_reach_history_escaped():
    """The case the fuzz found (issue 28 put the backend's Neuron options in History's Backend column)."""
    [original] = [e for e in RECORDED["infer-cpu-tiny"] if e["type"] == "result"]
    result = dict(original["result"], backend="\x1b[2J\x07\r",
                  spec=dict(original["result"]["spec"], neuron_stack="\x1b]0;owned\x07", neuron_cc_flags="-O1\r"))
    read_stored(stored_run(result, "a"), stored_run(dict(original["result"], host="b"), "b"))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_whatever_decode_accepts_every_reader_takes(data):
    """One mutated line at a time, through every reader of its type (a few thousand lines in a few seconds)."""
    original = data.draw(st.sampled_from(EVERY_EVENT))
    try:
        event = decode(data.draw(mutated_line(original)))
    except ProtocolError:
        return  # refused: the session counts it and goes on (the test above)
    read_everywhere(event, original)


WRONG = [None, "x", [], {}, -1, True, [None]]  # a value of every other JSON type (and a negative number)


def one_of_each_shape() -> list[dict]:
    """One recorded event per type and shape (the Results of a training, an inference and a failed run...)."""
    shapes: dict[tuple[str, int], dict] = {}
    for event in EVERY_EVENT:
        shapes.setdefault((event["type"], len(list(paths_of(event, depth=-99)))), event)
    return list(shapes.values())


@pytest.mark.parametrize("event_type", ["hello", "probe", "phase", "step", "latency", "sample", "log", "result",
                                        "error", "end"])
def test_each_field_given_a_wrong_type_is_refused_or_read_safely(event_type):
    """Every field of every recorded event, set to a value of each other type: decode refuses it, or every
    reader takes it (a missing figure is N/A, never a crash)."""
    for original in (e for e in one_of_each_shape() if e["type"] == event_type):
        spec = INFER_SPEC if original["type"] == "latency" else TRAIN_SPEC
        for path in paths_of(original, depth=-99):
            for value in WRONG:
                event = json.loads(json.dumps(original))
                parent = event
                for key in path[:-1]:
                    parent = parent[key]
                parent[path[-1]] = value
                try:
                    accepted = decode(json.dumps(event).encode())
                except ProtocolError:
                    continue
                read_everywhere(accepted, original, specs=(spec,))


# --------------------------------------------------------------------------- 10,000 events, a seeded mutator
FUZZ_EVENTS = 10_000
FUZZ_SEED = 23  # the same 10,000 events every run: a failure names the line, and it comes back
STREAMS = {path.name: [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
           for path in sorted((DATA / "runs").glob("*.jsonl"))}
# Times as a host's clock (or a hostile host) could send them: past 2100, before 1970, no time at all, and
# the edges of what is kept.  ``time.localtime(1e300)`` raised OverflowError in the old progress line.
TIME_VALUES = ["1e300", "-1e300", "1.7976931348623157e308", "1e18", str(2 ** 62), str(2 ** 63 - 1), "253402300800",
               "4102444800", "4102444799.999", "0", "-0.0", "-0.5", "5e-324", "1e-300", '"now"', "null", "true"]


def _at(event: dict, path: tuple):
    for key in path:
        event = event[key]
    return event


def seeded_mutation(rng: random.Random, event: dict) -> bytes:
    """One mutation of a real event as the raw line, drawn from ``rng``: mostly times (``t`` or any number),
    else any field set to a hostile value, deleted, the type changed, the line cut, or garbage bytes."""
    event = json.loads(json.dumps(event))
    kind = rng.choice(["time", "time", "time", "set", "set", "delete", "type", "cut", "garbage"])
    line = json.dumps(event, separators=(",", ":"))
    if kind == "cut":
        return line.encode()[: rng.randint(1, max(1, len(line) - 1))]
    if kind == "garbage":
        return bytes(rng.randrange(256) for _ in range(rng.randint(1, 60))).replace(b"\n", b" ")
    paths = list(paths_of(event))
    if kind == "time":
        numbers = [p for p in paths if type(_at(event, p)) in (int, float)]
        path, value = rng.choice([("t",), ("t",), *numbers]), rng.choice(TIME_VALUES)
    elif kind == "type":
        path, value = ("type",), rng.choice(HOSTILE_VALUES)
    else:
        path, value = rng.choice(paths), rng.choice(HOSTILE_VALUES)
    parent = _at(event, path[:-1])
    if kind == "delete":
        del parent[path[-1]]
        return json.dumps(event).encode()
    parent[path[-1]] = PLACEHOLDER
    return json.dumps(event).replace(json.dumps(PLACEHOLDER), value, 1).encode()


def test_ten_thousand_mutated_real_events_end_no_printer_and_no_stream():
    """Every recorded stream, about half its lines mutated, until 10,000 mutated events: each line the CLI
    decodes goes on through the progress line, the live view and every reader of its type, one printer and
    one live view per stream as `neuronbench run` and the app keep them; the stored run built from the
    stream's times goes through `runs list`/`runs show`, History's row, compare and the report.  Nothing
    may raise: a refused line is counted (the session says how many), every other one is shown."""
    rng = random.Random(FUZZ_SEED)
    counts: Counter = Counter()
    failures: list[str] = []

    def safely(what: str, line: bytes, read) -> None:
        try:
            read()
        except Exception as exc:
            failures.append(f"{what} on {line[:300]!r}: {exc!r}\n{traceback.format_exc(limit=-3)}")

    while counts["mutated"] < FUZZ_EVENTS:
        name = rng.choice(sorted(STREAMS))
        events = STREAMS[name]
        result_event = next((e for e in events if e["type"] == "result"), None)
        spec = INFER_SPEC if (result_event or {}).get("result", {}).get("workload") == "infer" else TRAIN_SPEC
        printer = ProgressPrinter("fuzzed", spec, stream=io.StringIO())
        view = LiveRunState("fuzzed", spec)
        times, last_result = [], None
        for original in events:
            mutate = rng.random() < 0.5
            line = seeded_mutation(rng, original) if mutate else json.dumps(original).encode()
            counts["mutated"] += mutate
            try:
                event = decode(line)
            except ProtocolError:
                counts["refused"] += 1
                continue
            counts["handled"] += 1
            times.append(event["t"])
            safely("the progress line", line, lambda: printer(event))  # noqa: B023 - called at once
            safely("the live view", line, lambda: view.apply(event))  # noqa: B023
            safely(f"the readers of a {event['type']} event", line,
                   lambda: read_by_type(event, original))  # noqa: B023
            if event["type"] == "result":
                last_result = event["result"]
        assert_printable(printer.stream.getvalue())
        if last_result is not None and result_event is not None:
            run = stored_run(dict(last_result, host="fuzzed"), "a", min(times), max(times))
            other = stored_run(dict(result_event["result"], host="b"), "b")
            safely(f"the stored run of {name}", b"(its times)", lambda: read_stored(run, other))  # noqa: B023
        counts["streams"] += 1

    assert not failures, f"{len(failures)} uncaught of {counts}:\n" + "\n".join(failures[:3])
    assert counts["refused"] > 1000 and counts["handled"] > FUZZ_EVENTS, counts  # both paths were exercised
