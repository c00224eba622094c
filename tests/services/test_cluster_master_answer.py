"""A node 0 whose ``master`` answer has the wrong shape fails the run in one sentence, stored, with nothing started."""
from __future__ import annotations

import argparse

import pytest

from app.cli.recorded_repeats import recorded_repeats
from app.core.errors import AgentError
from app.core.pricebook import PriceBook
from app.services.cluster_run import ClusterRun, NodeTarget
from app.services.run_group import RunGroup
from app.services.store import RunStore
from app.services.transport import Transport
from remote_agent.protocol import RunSpec
from tests.services.test_event_fuzz import LinesProcess

SPEC = RunSpec(workload="train", model="vit_tiny_patch16_224", nnodes=2, steps=20, batch_sizes=(2,))


class Node(Transport):
    """A node whose ``master`` prints ``answer``; every command asked of it is kept."""

    def __init__(self, host: str, answer: bytes) -> None:
        self.host, self.answer, self.commands = host, answer, []

    def start(self, args, stdin=None):
        self.commands.append(args[0])
        return LinesProcess([self.answer + b"\n"] if args[0] == "master" else [])


@pytest.mark.parametrize("answer, why", [
    (b"{}", "no 'address'"),
    (b"[1, 2]", "not an object"),
    (b'"just text"', "not an object"),
    (b'{"address": "10.0.0.1", "master_port": "29500x", "comm_port": 0}', "master_port must be a port number"),
    (b'{"address": "10.0.0.1", "master_port": 70000, "comm_port": 0}', "master_port must be a port number"),
    (b'{"address": "a b;rm -rf /", "master_port": 29500, "comm_port": 0}', "is not a host name or address"),
    (b'{"address": "\\u001b[2J", "master_port": true, "comm_port": 0}', "is not a host name or address"),
    (b"[" * 5000, "agent exit status 0"),
])
def test_a_wrong_master_answer_is_one_sentence_naming_node_0(answer, why):
    nodes = [Node("alpha", answer), Node("beta", b"")]
    run = ClusterRun([NodeTarget(n, n.host) for n in nodes], SPEC)
    with pytest.raises(AgentError) as caught:
        run.run()
    message = str(caught.value)
    assert message.startswith("alpha (node 0) could not pick a master address and ports: ") and why in message, message
    assert "\x1b" not in message and "\n" not in message and len(message) < 500
    assert [n.commands for n in nodes] == [["master"], []]  # no node was asked to run anything


def test_the_failed_run_is_stored_with_that_sentence(tmp_path):
    nodes = [Node("alpha", b"{}"), Node("beta", b"")]
    args = argparse.Namespace(repeats=1)
    with RunStore(tmp_path / "runs.db") as store:
        results = recorded_repeats(
            args, store, PriceBook(), "alpha,beta", SPEC, (None, None), lambda _e: None, lambda _w: None,
            lambda run_id, on_event, _printer: ClusterRun([NodeTarget(n, n.host) for n in nodes], SPEC,
                                                          run_id=run_id, on_event=on_event), RunGroup())
        assert [r["status"] for r in results] == ["failed"]
        stored = store.get_run(results[0]["run_id"])
        assert stored.status == "failed"
        assert "alpha (node 0) could not pick a master address and ports" in results[0]["error"]["message"]
