"""Hosts whose sshd has no SFTP subsystem (hardened images): the agent and the timm wheel go up over an exec
channel, checked by their sha256 on the host, and a damaged upload is refused."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.core.errors import DeployError
from app.paths import AppPaths
from app.services.ssh_prompts import TIMM_FROM_WHEEL, NoPrompts
from app.services.ssh_transport import SshTransport
from tests.e2e.conftest import add_host, remote_profile
from tests.e2e.sshd import make_server
from tests.helpers import tiny_model_flags


@pytest.fixture
def bare_sshd(tmp_path, ssh_client):
    """A real sshd configured without ``Subsystem sftp``."""
    server = make_server(tmp_path / "bare-sshd", ssh_client.key, sftp=False).start()
    yield server
    server.stop()


def agent_folder(server) -> Path:
    return server.home / ".cache" / "neuronbench" / "agent"


@pytest.mark.slow
def test_hosts_test_and_a_tiny_run_work_on_a_host_without_sftp(bare_sshd, data_dir, run_cli, ssh_env):
    add_host(data_dir, remote_profile(bare_sshd))
    out = run_cli("hosts", "test", "box", "--accept-new-host-key", "--json", env=ssh_env)
    assert out.code == 0, out.stderr
    report = out.json()
    assert report["agent_uploaded"] is True
    assert "over an SSH exec channel (the host has no SFTP subsystem)" in out.stderr
    assert "subsystem request for sftp" in bare_sshd.log.read_text()  # SFTP was really refused by the server
    agent = Path(report["agent"])
    assert (agent / "__main__.py").is_file() and (agent.parent / f"{agent.name}.pyz").is_file()
    assert stat.S_IMODE((agent.parent / f"{agent.name}.pyz").stat().st_mode) == 0o600
    for folder in (agent.parent, agent.parent.parent, agent.parent.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not list(agent.parent.glob(".*.tmp"))  # renamed into place, nothing left behind
    assert report["env"]["python"]["executable"] == sys.executable

    run = run_cli("run", "--host", "box", "--workload", "train", *tiny_model_flags(), "--backend", "cpu",
                  "--workers", "0", "--batch-size", "4", "--steps", "3", "--warmup", "1", "--json", env=ssh_env)
    assert run.code == 0, run.stderr
    [result] = run.json()
    assert result["status"] == "ok" and result["train"]["steps_measured"] == 2


def test_a_damaged_upload_is_refused_in_one_sentence_and_nothing_is_installed(tmp_path, ssh_client, data_dir):
    # Every command's input gets one extra byte on its way in, as a broken wrapper on the host would do it.
    wrapper = tmp_path / "damaging-wrapper.sh"
    wrapper.write_text('#!/bin/sh\n{ cat; printf x; } | exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"\n')
    wrapper.chmod(0o755)
    server = make_server(tmp_path / "damaging-sshd", ssh_client.key, sftp=False,
                         extra_config=f"ForceCommand {wrapper}").start()
    try:
        ssh = SshTransport(remote_profile(server), AppPaths.resolve(data_dir), NoPrompts(True))
        with pytest.raises(DeployError) as caught:
            ssh.setup()
        ssh.close()
    finally:
        server.stop()
    message = str(caught.value)
    assert message.startswith("the agent sent to box over an SSH exec channel arrived damaged")
    assert "was not installed" in message and "\n" not in message
    size = ssh.bundle.path.stat().st_size
    assert f"{size + 1} of {size} bytes" in message
    assert not agent_folder(server).exists() or not list(agent_folder(server).iterdir())  # no file, no temp


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="needs a system python3 without timm")
def test_the_timm_wheel_goes_up_over_the_exec_channel_too(bare_sshd, data_dir):
    if subprocess.run(["/usr/bin/python3", "-c", "import timm"], capture_output=True).returncode == 0:
        pytest.skip("the system python3 has timm already")
    said: list[str] = []
    ssh = SshTransport(remote_profile(bare_sshd, python="/usr/bin/python3"), AppPaths.resolve(data_dir),
                       NoPrompts(True, timm=TIMM_FROM_WHEEL), on_progress=said.append)
    setup = ssh.setup(libraries=("timm",))
    ssh.close()
    assert setup.timm and (Path(setup.site_dir) / "timm" / "__init__.py").is_file()
    assert any(line.startswith("uploaded timm-") and line.endswith("over an SSH exec channel (the host has no SFTP "
                                                                   "subsystem)") for line in said), said
    wheels = Path(setup.cache_dir) / "wheels"
    assert [p.name for p in wheels.iterdir()] == [p.name for p in wheels.glob("timm-*-py3-none-any.whl")]
