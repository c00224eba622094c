"""Connecting to a real OpenSSH server: host keys like StrictHostKeyChecking=ask, keys, errors, deploy.

No torch here: these run the agent's `probe --quick` at most.
"""
from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.errors import AuthError, ConnectError, DeployError, HostKeyError
from app.paths import AppPaths
from app.services.session import probe_host
from app.services.ssh_connect import KeyRing
from app.services.ssh_prompts import TIMM_FROM_WHEEL, NoPrompts
from app.services.ssh_transport import SshTransport
from tests.e2e.conftest import add_host, remote_profile
from tests.e2e.sshd import free_port, keygen, make_server


class Recorder:
    """Answers the SSH layer's questions as told, and remembers what it was asked."""

    def __init__(self, accept: bool = False, passphrase: str | None = None, timm: str | None = None) -> None:
        self.accept, self.passphrase, self.timm = accept, passphrase, timm
        self.asked: list[tuple] = []

    def confirm_host_key(self, host, key_type, fingerprint):
        self.asked.append(("host_key", host, key_type, fingerprint))
        return self.accept

    def ask_passphrase(self, key_path):
        self.asked.append(("passphrase", key_path))
        return self.passphrase

    def offer_install(self, offer):
        self.asked.append((offer.library, offer.host, offer.python, offer.choices))
        return self.timm if offer.library == "timm" else None


def fingerprint_of(pub: Path) -> str:
    """The SHA256 fingerprint as OpenSSH's own tool prints it (independent of paramiko)."""
    return subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True, check=True).stdout.split()[1]


@pytest.fixture
def paths(data_dir):
    return AppPaths.resolve(data_dir)


def transport(server, paths, prompts, **profile_fields) -> SshTransport:
    return SshTransport(remote_profile(server, **profile_fields), paths, prompts)


# ------------------------------------------------------------------------------------------ host keys
def test_an_unknown_host_key_is_trusted_only_after_its_fingerprint_is_confirmed(sshd, paths, ssh_client):
    expected = fingerprint_of(Path(f"{sshd.host_key}.pub"))
    no = Recorder(accept=False)
    with pytest.raises(HostKeyError) as info:
        transport(sshd, paths, no).connection()
    assert no.asked == [("host_key", f"box ([127.0.0.1]:{sshd.port})", "ssh-ed25519", expected)]
    assert expected in str(info.value) and "--accept-new-host-key" in str(info.value)
    app_file = paths.config / "known_hosts"
    assert not app_file.exists()

    yes = Recorder(accept=True)
    transport(sshd, paths, yes).connection().close()
    assert len(yes.asked) == 1
    assert app_file.read_text().startswith(f"[127.0.0.1]:{sshd.port} ssh-ed25519 ")
    assert stat.S_IMODE(app_file.stat().st_mode) == 0o600

    again = Recorder(accept=False)
    transport(sshd, paths, again).connection().close()
    assert again.asked == []  # known now: nothing to ask
    assert not (ssh_client.home / ".ssh" / "known_hosts").exists()  # the user's file is never written


def test_keys_in_the_users_known_hosts_are_trusted_even_hashed(sshd, paths, ssh_client):
    user_file = ssh_client.home / ".ssh" / "known_hosts"
    user_file.write_text(f"[127.0.0.1]:{sshd.port} {Path(f'{sshd.host_key}.pub').read_text()}")
    subprocess.run(["ssh-keygen", "-H", "-f", str(user_file)], check=True, capture_output=True)
    assert "127.0.0.1" not in user_file.read_text()  # hashed, as Debian's HashKnownHosts does
    prompts = Recorder(accept=False)
    transport(sshd, paths, prompts).connection().close()
    assert prompts.asked == []


@pytest.mark.parametrize("where", ["app", "user"])
def test_a_changed_host_key_is_refused_and_the_old_entry_named(sshd, paths, ssh_client, tmp_path, where):
    old = keygen(tmp_path / "old_host_key")
    target = paths.config / "known_hosts" if where == "app" else ssh_client.home / ".ssh" / "known_hosts"
    target.write_text(f"[127.0.0.1]:{sshd.port} {Path(f'{old}.pub').read_text()}")
    prompts = Recorder(accept=True)  # willing to trust new keys: a *changed* key is still refused
    with pytest.raises(HostKeyError) as info:
        transport(sshd, paths, prompts).connection()
    message = str(info.value)
    assert "CHANGED" in message
    assert fingerprint_of(Path(f"{old}.pub")) in message and fingerprint_of(Path(f"{sshd.host_key}.pub")) in message
    remove = f"ssh-keygen -R '[127.0.0.1]:{sshd.port}'" + (f" -f {target}" if where == "app" else "")
    assert f"`{remove}`" in message
    assert prompts.asked == []


def test_cli_refuses_an_unknown_host_without_a_terminal_until_told_to_accept(sshd, data_dir, run_cli, ssh_env):
    add_host(data_dir, remote_profile(sshd))
    fingerprint = fingerprint_of(Path(f"{sshd.host_key}.pub"))
    out = run_cli("hosts", "test", "box", env=ssh_env)
    assert out.code == 1
    assert out.stderr.count("\n") == 1 and fingerprint in out.stderr and "--accept-new-host-key" in out.stderr

    out = run_cli("hosts", "test", "box", "--accept-new-host-key", "--json", env=ssh_env)
    assert out.code == 0, out.stderr
    report = out.json()
    assert report["host_key"] == {"type": "ssh-ed25519", "fingerprint": fingerprint}
    assert report["agent_uploaded"] is True and report["python"] == sys.executable
    assert report["env"]["python"]["executable"] == sys.executable
    agent = Path(report["agent"])  # the zipapp, unpacked and byte-compiled for the host's Python
    assert agent.parent == sshd.home / ".cache" / "neuronbench" / "agent"
    assert (agent.parent / f"{agent.name}.pyz").is_file() and (agent / "__main__.py").is_file()
    assert list((agent / "remote_agent" / "__pycache__").glob("protocol.*.pyc"))
    for folder in (agent, agent.parent, agent.parent.parent, agent.parent.parent.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    uploaded_at = agent.stat().st_mtime_ns

    out = run_cli("hosts", "test", "box", "--json", env=ssh_env)  # now known: no flag needed
    assert out.code == 0, out.stderr
    assert out.json()["agent_uploaded"] is False  # the same hash is there: no upload
    assert agent.stat().st_mtime_ns == uploaded_at

    for command in ("attach", "cancel"):  # a run that is not there: one sentence from the host, exit 1
        out = run_cli("runs", command, "20200101-000000-abcdef", "--host", "box", env=ssh_env)
        assert out.code == 1 and "no run 20200101-000000-abcdef on this host" in out.stderr, out.stderr


def test_a_host_remembered_here_is_not_inspected_again_but_redeployed_if_its_agent_went(
        tmp_path, ssh_client, paths):
    sshd = make_server(tmp_path / "verbose-sshd", ssh_client.key, extra_config="LogLevel VERBOSE").start()
    try:
        _remembered_then_redeployed(sshd, paths)
    finally:
        sshd.stop()


def _commands_run(sshd) -> int:
    return sshd.log.read_text().count("Starting session: command")


def _remembered_then_redeployed(sshd, paths) -> None:
    first = transport(sshd, paths, NoPrompts(True))
    agent = Path(first.setup().agent_path)
    first.close()
    before = _commands_run(sshd)
    second = transport(sshd, paths, NoPrompts(True))
    probe_host(second, quick=True)
    second.close()
    assert _commands_run(sshd) == before + 1  # the probe itself: no inspection of a host we know

    shutil.rmtree(agent.parent)  # someone cleaned the host's cache

    again = transport(sshd, paths, NoPrompts(True))
    env = probe_host(again, quick=True)  # the remembered agent is gone: prepared anew, then it runs
    again.close()
    assert env["python"]["executable"] == sys.executable
    assert (agent / "__main__.py").is_file()


# ------------------------------------------------------------------------------------------ keys
def test_a_refused_key_is_named_in_the_auth_error(sshd, paths, tmp_path):
    stranger = keygen(tmp_path / "stranger")
    with pytest.raises(AuthError) as info:
        transport(sshd, paths, NoPrompts(True), identity_file=str(stranger)).connection()
    assert f"{stranger} (refused)" in str(info.value) and "authorized_keys" in str(info.value)
    with pytest.raises(AuthError, match=r"no ssh-agent is running and none of ~/\.ssh/id_ed25519"):
        transport(sshd, paths, NoPrompts(True), identity_file="").connection()


@pytest.mark.skipif(not shutil.which("ssh-agent"), reason="needs ssh-agent (openssh-client)")
def test_keys_held_by_the_ssh_agent_are_used(sshd, paths, tmp_path, monkeypatch):
    socket_path = tmp_path / "agent.sock"
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", str(socket_path)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not socket_path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        monkeypatch.setenv("SSH_AUTH_SOCK", str(socket_path))
        subprocess.run(["ssh-add", "-q", str(sshd.client_key)], check=True, capture_output=True)
        # No key file anywhere (no identity, no ~/.ssh/id_*): only the agent can log us in.
        transport(sshd, paths, NoPrompts(True), identity_file="").connection().close()
        subprocess.run(["ssh-add", "-q", "-D"], check=True, capture_output=True)
        subprocess.run(["ssh-add", "-q", str(keygen(tmp_path / "other"))], check=True, capture_output=True)
        with pytest.raises(AuthError, match=r"tried 1 key\(s\) from the ssh-agent"):
            transport(sshd, paths, NoPrompts(True), identity_file="").connection()
    finally:
        agent.terminate()
        agent.wait(timeout=10)


def test_an_encrypted_key_is_unlocked_through_the_passphrase_callback(sshd, paths, tmp_path, data_dir):
    locked = keygen(tmp_path / "locked", passphrase="s3cret-phrase")
    with open(sshd.root / "authorized_keys", "a") as handle:
        handle.write(Path(f"{locked}.pub").read_text())
    for answer, why in ((None, "encrypted, no passphrase given"), ("wrong", "wrong passphrase")):
        with pytest.raises(AuthError, match=why):
            transport(sshd, paths, Recorder(True, passphrase=answer), identity_file=str(locked)).connection()
    prompts = Recorder(True, passphrase="s3cret-phrase")
    keyring = KeyRing()
    ssh = SshTransport(remote_profile(sshd, identity_file=str(locked)), paths, prompts, keyring=keyring)
    ssh.connection()
    ssh.close()
    ssh.connection()  # a reconnect reuses the unlocked key: asked once
    ssh.close()
    assert [q for q in prompts.asked if q[0] == "passphrase"] == [("passphrase", str(locked))]
    stored = b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())
    assert b"s3cret-phrase" not in stored


# ------------------------------------------------------------------------------------------ connection errors
def test_a_closed_port_is_refused_in_one_sentence(paths, ssh_client, sshd):
    profile = remote_profile(sshd, port=free_port())
    with pytest.raises(ConnectError, match=r"box \(\[127.0.0.1\]:\d+\) refused the connection: is sshd running"):
        SshTransport(profile, paths, NoPrompts(True)).connection()


def test_silence_is_a_timeout_in_one_sentence(paths, ssh_client, sshd):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    profile = remote_profile(sshd, port=port)
    try:
        # The first connection is accepted by the kernel but nothing speaks SSH on it.
        with pytest.raises(ConnectError, match=r"accepted the connection but the SSH handshake failed: no SSH server "
                                               r"answered within 0\.5 s"):
            SshTransport(profile, paths, NoPrompts(True), connect_timeout=0.5).connection()
        # The backlog is full now: the next SYN gets no answer at all.
        with pytest.raises(ConnectError, match=r"did not answer within 0.5 s: check the address, that the instance"):
            SshTransport(profile, paths, NoPrompts(True), connect_timeout=0.5).connection()
    finally:
        listener.close()


@pytest.mark.skipif(not shutil.which("unshare"), reason="needs unshare(1) for an offline network namespace")
def test_a_name_that_does_not_resolve_is_one_sentence(data_dir, run_cli, ssh_env, ssh_client, sshd):
    # In an empty network namespace the resolver is unreachable: no query leaves this machine.
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace here")
    add_host(data_dir, remote_profile(sshd, hostname="trn1.no-such-host.invalid", port=22))
    out = subprocess.run(["unshare", "-n", sys.executable, "-m", "app", "hosts", "test", "box"], env=ssh_env,
                         capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 1
    assert "cannot find box: the name 'trn1.no-such-host.invalid' does not resolve" in out.stderr
    assert out.stderr.count("\n") == 1


# ------------------------------------------------------------------------------------------ remote Python, deploy
def test_a_missing_or_old_remote_python_is_one_sentence(sshd, paths):
    with pytest.raises(DeployError, match=r"the Python set for box \('/nowhere/python3'\) does not exist there"):
        transport(sshd, paths, NoPrompts(True), python="/nowhere/python3").setup()
    old = sshd.home / "python3.6"
    old.write_text("#!/bin/sh\necho nb-version=3.6.9\necho nb-executable=$0\n")  # what an old Python reports
    old.chmod(0o755)
    with pytest.raises(DeployError, match=r"box has Python 3.6.9 .*, but the agent needs 3.8 or newer"):
        transport(sshd, paths, NoPrompts(True), python=str(old)).setup()


def test_the_newest_neuron_venv_is_chosen_when_no_python_is_set(sshd, paths, tmp_path):
    for version in ("2_9", "2_10", "2_8"):
        bin_dir = tmp_path / "opt" / f"aws_neuronx_venv_pytorch_{version}" / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "python").symlink_to(sys.executable)
    ssh = SshTransport(sshd.profile("box"), paths, NoPrompts(True),
                       venv_glob=str(tmp_path / "opt" / "aws_neuronx_venv_pytorch_*"))
    assert ssh.setup().python == str(tmp_path / "opt" / "aws_neuronx_venv_pytorch_2_10" / "bin" / "python")
    ssh.close()


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="needs a system python3 without timm")
def test_timm_is_offered_and_installed_from_the_wheel_the_app_carries(sshd, paths):
    probe = subprocess.run(["/usr/bin/python3", "-c", "import timm"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("the system python3 has timm already")
    prompts = Recorder(True, timm=TIMM_FROM_WHEEL)
    ssh = transport(sshd, paths, prompts, python="/usr/bin/python3")
    setup = ssh.setup(libraries=("timm",))  # what a timm: run asks for (hosts test asks for every library)
    ssh.close()
    offers = [q for q in prompts.asked if q[0] == "timm"]
    assert offers == [("timm", "box", "/usr/bin/python3", ("pypi", "wheel"))]
    assert setup.timm and (Path(setup.site_dir) / "timm" / "__init__.py").is_file()
    assert any((Path(setup.site_dir)).glob("timm-*.dist-info"))

    again = Recorder(True)
    assert transport(sshd, paths, again, python="/usr/bin/python3").setup(fresh=True, libraries=("timm",)).timm
    assert [q for q in again.asked if q[0] == "timm"] == []  # the agent's private site is seen


def test_proxy_jump_goes_through_the_jump_host_checking_both_keys(tmp_path, ssh_client, paths):
    jump = make_server(tmp_path / "jump", ssh_client.key, extra_config="LogLevel DEBUG1").start()
    target = make_server(tmp_path / "target", ssh_client.key).start()
    try:
        jump_profile = remote_profile(jump, "bastion")
        prompts = Recorder(accept=True)
        ssh = SshTransport(remote_profile(target, "inner", proxy_jump="bastion"), paths, prompts,
                           profiles={"bastion": jump_profile})
        assert ssh.setup().python == sys.executable
        ssh.close()
        assert [q[1] for q in prompts.asked] == [f"bastion ([127.0.0.1]:{jump.port})",
                                                 f"inner ([127.0.0.1]:{target.port})"]
        assert f"target 127.0.0.1 port {target.port}" in jump.log.read_text()  # the tunnel really went through
    finally:
        jump.stop()
        target.stop()
