"""A Ctrl-C waits until a run's Result is recorded, not only until the run ended (RunGroup.settled).

The CLI stores a Result after ``follow`` returns (pricing, a SQLite write).  If the Ctrl-C's wait
ended in that gap, ``run`` would close the store and end the process under the write: the run left
``unfinished``, no summary.  Here the recorder blocks on an Event, and the Ctrl-C is a real SIGINT
sent while it is blocked: nothing is timed.
"""
from __future__ import annotations

import os
import signal
import threading

from app.cli.interrupt import follow_interruptibly
from app.services.multi_run import RunListener, run_on_hosts
from app.services.replay import ReplayTransport, live_stream, read_events
from app.services.run_group import RunGroup
from remote_agent.protocol import RunSpec
from tests.ui.conftest import RUNS

EVENTS = read_events(RUNS / "train-cpu-tiny.events.jsonl")
WAIT_S = 30  # only a bound on a broken test; nothing waits this long when it passes


class BlockingRecorder:
    """``on_result`` that says it started, then blocks until released (a slow price look-up, a busy disk)."""

    def __init__(self) -> None:
        self.entered, self.release, self.done = threading.Event(), threading.Event(), threading.Event()

    def __call__(self, result: dict) -> dict:
        self.entered.set()
        assert self.release.wait(WAIT_S)
        self.done.set()
        return dict(result, recorded=True)


def test_settled_waits_for_the_block_that_records_the_result():
    group, recorder = RunGroup(), BlockingRecorder()
    spec = RunSpec.from_dict(next(e for e in EVENTS if e["type"] == "result")["result"]["spec"])
    worker = threading.Thread(target=run_on_hosts, args=([ReplayTransport(lambda: live_stream(EVENTS), "box")], spec),
                              kwargs={"listener_for": lambda _t: RunListener(on_result=recorder), "group": group})
    worker.start()
    assert recorder.entered.wait(WAIT_S)
    group.cancel()
    assert not group.settled()  # the run has ended, but its Result is not stored yet
    recorder.release.set()
    worker.join(WAIT_S)
    assert group.settled() and recorder.done.is_set()


def test_a_ctrl_c_while_the_result_is_stored_returns_the_stored_result():
    group, recorder = RunGroup(), BlockingRecorder()
    spec = RunSpec.from_dict(next(e for e in EVENTS if e["type"] == "result")["result"]["spec"])
    settled = group.settled

    def settled_then_release() -> bool:
        answer = settled()  # what the Ctrl-C's wait decides on, while the recorder is still blocked
        if not answer:
            recorder.release.set()  # it waits on: let the Result be stored
        return answer

    group.settled = settled_then_release  # type: ignore[method-assign]
    sent = threading.Thread(target=lambda: recorder.entered.wait(WAIT_S) and os.kill(os.getpid(), signal.SIGINT))
    sent.start()
    results = follow_interruptibly(
        lambda: run_on_hosts([ReplayTransport(lambda: live_stream(EVENTS), "box")], spec,
                             listener_for=lambda _t: RunListener(on_result=recorder), group=group),
        group, "cancelling")
    recorder.release.set()  # (when the wait ended early, the worker is still blocked here)
    sent.join(WAIT_S)
    assert group.cancelled, "the SIGINT reached the wait"
    assert results is not None and [r.get("recorded") for r in results] == [True], \
        "the wait ended while the Result was being stored"
