"""A run's edges, without torch: the agent dying is not a dropped connection; a cancel at once still ends cleanly."""
from __future__ import annotations

import os
import signal

import pytest

from app.core.errors import AgentError
from app.paths import AppPaths
from app.services.session import RunSession
from app.services.ssh_prompts import NoPrompts
from app.services.ssh_transport import SshTransport
from app.services.transport import LocalTransport
from remote_agent.protocol import RunSpec
from tests.e2e.conftest import remote_profile

SPEC = RunSpec(workload="train", model="vit_tiny_patch16_224", backend="cpu", batch_sizes=(2,), steps=100000,
               warmup=1, workers=0)


def test_an_agent_that_dies_is_reported_not_reconnected_to(sshd, data_dir):
    ssh = SshTransport(remote_profile(sshd), AppPaths.resolve(data_dir), NoPrompts(accept_new_host_keys=True))
    notices: list[str] = []

    def on_event(event: dict) -> None:
        if event["type"] == "hello":
            os.kill(event["pid"], signal.SIGKILL)  # the supervisor dies (OOM killer, a crash): no `end` will come

    session = RunSession(ssh, SPEC, on_event=on_event, on_notice=notices.append)
    with pytest.raises(AgentError) as info:
        session.run()
    ssh.close()
    assert "was killed by SIGKILL before the run ended" in str(info.value)
    assert session.reconnects == 0 and notices == []  # the connection was fine: nothing to reconnect


def test_a_cancel_right_after_the_hello_still_ends_the_run_cleanly(app_paths):
    """The supervisor may still be starting when the hello arrives: a SIGTERM then must not kill it mid-start."""
    local = LocalTransport(app_paths)

    def on_event(event: dict) -> None:
        if event["type"] == "hello":
            os.killpg(event["pid"], signal.SIGTERM)  # what `cancel` sends first, without its start-up time

    session = RunSession(local, SPEC, on_event=on_event)
    result = session.run()
    assert result["status"] == "cancelled" and session.end["status"] == "cancelled"
