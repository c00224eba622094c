"""A launched run whose stream cannot be followed (a protocol error) is cancelled on its host, and that is said."""
from __future__ import annotations

import json

import pytest

from app.core.errors import ProtocolViolation
from app.services.session import RunSession
from app.services.transport import AgentProcess, Transport
from remote_agent.protocol import RunSpec, make_event

RUN_ID = "20261124-101500-abcdef"


class Scripted(AgentProcess):
    def __init__(self, lines: list[bytes], code: int, stderr: str = "") -> None:
        self._lines, self.code, self.stderr = lines, code, stderr

    def lines(self):
        yield from self._lines

    def wait(self, timeout=None):
        return self.code

    def stderr_text(self) -> str:
        return self.stderr

    def kill(self) -> None:
        pass

    def connection_lost(self) -> bool:
        return False


class Host(Transport):
    """`run` answers with a hello the schema refuses (a spec past its limits), then a probe; `cancel` with ``code``."""

    def __init__(self, cancel_code: int, cancel_stderr: str = "") -> None:
        self.host = "box"
        self.commands: list[str] = []
        self.cancel_code, self.cancel_stderr = cancel_code, cancel_stderr

    def start(self, args, stdin=None):
        self.commands.append(args[0])
        if args[0] == "cancel":
            return Scripted([], self.cancel_code, self.cancel_stderr)
        hello = make_event("hello", 1, 1.0, agent_version="1", protocol_version=1, pid=7, python="3.10",
                           run_id=RUN_ID, spec={"steps": 10 ** 20})
        probe = make_event("probe", 2, 1.1, env={})
        return Scripted([json.dumps(e).encode() + b"\n" for e in (hello, probe)], 0)


def test_a_run_whose_own_hello_is_refused_is_cancelled_and_the_refusal_named():
    host = Host(cancel_code=0)
    with pytest.raises(ProtocolViolation) as caught:
        RunSession(host, RunSpec(workload="train", model="vit_tiny_patch16_224"), run_id=RUN_ID).run()
    message = str(caught.value)
    assert host.commands == ["run", "cancel"]
    assert "the first event must be hello" in message
    assert "1 event from the agent refused (first: hello event #1: spec.steps is an integer outside" in message
    assert message.endswith(f"run {RUN_ID} was cancelled there: no process of it is left on box"), message
    assert caught.value.events_refused["count"] == 1  # the failed Result still counts the refusal


def test_a_cancel_that_fails_is_said_with_the_command_that_stops_the_run():
    host = Host(cancel_code=1, cancel_stderr="Traceback ...\nPermissionError: kill denied\n")
    with pytest.raises(ProtocolViolation) as caught:
        RunSession(host, RunSpec(workload="train", model="vit_tiny_patch16_224"), run_id=RUN_ID).run()
    assert str(caught.value).endswith(f"cancelling run {RUN_ID} failed (PermissionError: kill denied): "
                                      f"`neuronbench runs cancel {RUN_ID} --host box` stops it"), str(caught.value)
