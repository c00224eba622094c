"""ControlledRun: a run on a named thread that can be cancelled or left running on its host."""
from __future__ import annotations

import threading
from collections.abc import Sequence

import pytest

from app.core.errors import AgentError
from app.services.replay import ReplayTransport, live_stream, read_events
from app.services.run_control import ControlledRun, cancel_run
from app.services.transport import AgentProcess, LocalTransport, Transport
from remote_agent.protocol import RunSpec
from tests.ui.conftest import RUNS

EVENTS = read_events(RUNS / "train-cpu-tiny.events.jsonl")


class Recording(Transport):
    """Records every agent command started, and how many events the run had delivered by then."""

    def __init__(self, inner: Transport, seen: list) -> None:
        self.inner, self.host, self.seen = inner, inner.host, seen
        self.commands: list[tuple[str, int]] = []

    def start(self, args: Sequence[str], stdin: bytes | None = None) -> AgentProcess:
        self.commands.append((args[0], len(self.seen)))
        return self.inner.start(args, stdin)


class Outcome:
    def __init__(self) -> None:
        self.events: list[dict] = []
        self.threads: set[str] = set()
        self.ended = threading.Event()
        self.how: tuple[str, object] | None = None

    def on_event(self, event: dict) -> None:
        self.threads.add(threading.current_thread().name)
        self.events.append(event)

    def finish(self, how: str):
        def record(value) -> None:
            self.how = (how, value)
            self.ended.set()
        return record

    def callbacks(self) -> dict:
        return {"on_event": self.on_event, "on_done": self.finish("done"), "on_error": self.finish("error"),
                "on_detached": self.finish("detached")}


def spec() -> RunSpec:
    result = next(e for e in EVENTS if e["type"] == "result")["result"]
    return RunSpec.from_dict(result["spec"])


def test_a_run_reports_on_its_named_thread_and_ends_with_its_result():
    outcome = Outcome()
    run = ControlledRun(ReplayTransport(lambda: live_stream(EVENTS), "box"), spec(), **outcome.callbacks())
    run.start()
    assert outcome.ended.wait(30) and run.join(10)
    assert outcome.threads == {"run-box"}
    how, result = outcome.how
    assert how == "done" and result["status"] == "ok" and result["host"] == "box"
    assert [e["seq"] for e in outcome.events] == list(range(1, len(EVENTS) + 1))


def test_detach_leaves_the_run_and_reports_its_id_not_an_error():
    outcome = Outcome()
    transport = ReplayTransport(lambda: live_stream(EVENTS, loops=None), "box", pace=lambda _e: 0.01)
    run = ControlledRun(transport, spec(), run_id="20260101-000000-abcdef", **outcome.callbacks())
    run.start()
    while len(outcome.events) < 3:
        assert not outcome.ended.wait(0.05)
    run.detach()
    assert outcome.ended.wait(30) and run.join(10)
    assert outcome.how == ("detached", "20260101-000000-abcdef")


def test_a_detach_before_the_agent_starts_stops_following_at_once():
    outcome = Outcome()
    run = ControlledRun(ReplayTransport(lambda: live_stream(EVENTS, loops=None), "box", pace=lambda _e: 0.01),
                        spec(), **outcome.callbacks())
    run.detach()
    run.start()
    assert outcome.ended.wait(30) and run.join(10)
    assert outcome.how[0] == "detached" and outcome.events == []


def test_a_cancel_waits_until_the_supervisor_can_take_it():
    # The supervisor says hello before it installs its SIGTERM handler: the cancel goes after the next event.
    outcome = Outcome()
    replay = ReplayTransport(lambda: live_stream(EVENTS, loops=None), "box", pace=lambda _e: 0.02)
    transport = Recording(replay, outcome.events)
    run = ControlledRun(transport, spec(), **outcome.callbacks())
    run.cancel()
    run.start()
    assert outcome.ended.wait(30) and run.join(10)
    assert transport.commands[0] == ("run", 0)
    assert transport.commands[1] == ("cancel", 2)  # hello, then one more event, then the cancel
    # a replay stops dead when cancelled (a real agent ends with status "cancelled": tests/ui/test_real_runs.py)
    how, error = outcome.how
    assert how == "error" and isinstance(error, AgentError)


def test_cancelling_a_run_that_is_not_running_says_so(app_paths):
    assert cancel_run(LocalTransport(app_paths), "20260101-000000-000000") is False


def test_an_unreachable_agent_is_an_error_with_its_sentence(app_paths, tmp_path):
    outcome = Outcome()
    transport = LocalTransport(app_paths, python=str(tmp_path / "no-such-python"))
    run = ControlledRun(transport, spec(), **outcome.callbacks())
    run.start()
    assert outcome.ended.wait(30) and run.join(10)
    how, error = outcome.how
    assert how == "error"
    assert str(error).startswith(f"could not start the agent on local with {tmp_path / 'no-such-python'}")


@pytest.fixture(autouse=True)
def _no_threads_left():
    before = set(threading.enumerate())
    yield
    for thread in set(threading.enumerate()) - before:
        thread.join(10)
        assert not thread.is_alive(), thread.name
