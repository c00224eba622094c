"""SSH start latency: from `run` to the first `hello` event over loopback, against bare SSH, side by side.

A real sshd on 127.0.0.1 (the tests' fixture, so run as root or where
/run/sshd exists) and an isolated client HOME.  Each round measures, in this
order so that drift hits all of them:

- ``ssh true``: OpenSSH's client, connect + key login + run ``true``;
- ``paramiko exec``: paramiko's SSHClient, connect + key login + ``true`` + exit status;
- ``warm``: a fresh SshTransport (new connection, as a new CLI process makes) starting
  ``agent run`` on a host prepared before, until the run's ``hello`` arrives (then the
  run is cancelled);
- ``cold``: first contact: the remote agent folder and what this computer remembers of
  the host are deleted, so the host is inspected and the agent uploaded first.

The remote Python is this interpreter.  Prints medians, the split of the warm
path (connect, prepare, agent start to hello) and the ratios; targets: warm <= 2x
paramiko exec, cold <= 1.5 s.  On loopback the host's processes share this
machine's CPUs with the client: the run's supervisor starting up (a Python with
its site-packages) competes with the client reading the hello, which a real
remote host does not do, so the figures here are an upper bound.

    python bench/ssh_latency.py [--rounds 7]
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import paramiko  # noqa: E402

from app.paths import AppPaths  # noqa: E402
from app.services.session import RunSession  # noqa: E402
from app.services.ssh_prompts import NoPrompts  # noqa: E402
from app.services.ssh_transport import SshTransport  # noqa: E402
from remote_agent.protocol import RunSpec  # noqa: E402
from tests.e2e.sshd import keygen, make_server, sshd_unavailable  # noqa: E402

SPEC = RunSpec(workload="train", model="vit_tiny_patch16_224", backend="cpu", batch_sizes=(2,), steps=2, warmup=1,
               workers=0)


def bare_ssh(server, known_hosts: Path) -> float:
    started = time.perf_counter()
    subprocess.run(["ssh", "-q", "-i", str(server.client_key), "-p", str(server.port), "-o", "BatchMode=yes",
                    "-o", f"UserKnownHostsFile={known_hosts}", "-o", "StrictHostKeyChecking=yes",
                    "-o", "IdentitiesOnly=yes", f"{server.user}@127.0.0.1", "true"], check=True)
    return time.perf_counter() - started


def bare_paramiko(server, known_hosts: Path, nodelay: bool = False) -> float:
    """paramiko's SSHClient as it comes, or with TCP_NODELAY on its socket as SshTransport sets it."""
    started = time.perf_counter()
    sock = None
    if nodelay:
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    client = paramiko.SSHClient()
    client.load_host_keys(str(known_hosts))
    client.connect("127.0.0.1", server.port, server.user, key_filename=str(server.client_key), allow_agent=False,
                   look_for_keys=False, sock=sock)
    _stdin, stdout, _stderr = client.exec_command("true")
    stdout.channel.recv_exit_status()
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


def to_hello(server, paths: AppPaths) -> dict[str, float]:
    """A fresh transport: connect, inspect/deploy, start `agent run` and wait for hello; then cancel."""
    marks: dict[str, float] = {}
    started = time.perf_counter()
    ssh = SshTransport(server.profile("bench", python=sys.executable), paths, NoPrompts())
    ssh.connection()
    marks["connect"] = time.perf_counter() - started
    ssh.setup()
    marks["setup"] = time.perf_counter() - started - marks["connect"]
    session = RunSession(ssh, SPEC)

    def on_event(event: dict) -> None:
        if event["type"] == "hello" and "hello" not in marks:
            marks["hello"] = time.perf_counter() - started
            cancel = ssh.start(["cancel", session.run_id])  # keep the machine quiet for the next round
            for _line in cancel.lines():
                pass
            cancel.wait(60)

    session.on_event = on_event
    session.run()
    ssh.close()
    marks["start_to_hello"] = marks["hello"] - marks["connect"] - marks["setup"]
    return marks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    reason = sshd_unavailable()
    if reason or not shutil.which("ssh"):
        print(f"cannot run: {reason or 'the OpenSSH client (ssh) is not installed'}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "client-home" / ".ssh").mkdir(parents=True)
        os.environ["HOME"] = str(tmp / "client-home")
        os.environ.pop("SSH_AUTH_SOCK", None)
        server = make_server(tmp / "sshd", keygen(tmp / "client_key")).start()
        try:
            paths = AppPaths.resolve(tmp / "data")
            known = paths.config / "known_hosts"
            known.write_text(f"[127.0.0.1]:{server.port} {Path(f'{server.host_key}.pub').read_text()}")
            to_hello(server, paths)  # build the zipapp, fill the page cache: not counted
            rows: dict[str, list[float]] = {k: [] for k in ("ssh", "paramiko", "paramiko_nodelay", "warm", "cold",
                                                             "connect", "setup", "start_to_hello", "cold_setup")}
            for _ in range(args.rounds):
                rows["ssh"].append(bare_ssh(server, known))
                rows["paramiko"].append(bare_paramiko(server, known))
                rows["paramiko_nodelay"].append(bare_paramiko(server, known, nodelay=True))
                warm = to_hello(server, paths)
                rows["warm"].append(warm["hello"])
                for key in ("connect", "setup", "start_to_hello"):
                    rows[key].append(warm[key])
                shutil.rmtree(server.home / ".cache" / "neuronbench" / "agent")  # first contact: nothing
                shutil.rmtree(paths.cache / "hosts")  # on the host, nothing remembered here
                cold = to_hello(server, paths)
                rows["cold"].append(cold["hello"])
                rows["cold_setup"].append(cold["setup"])
        finally:
            server.stop()
    med = {k: statistics.median(v) * 1000 for k, v in rows.items()}
    print(f"median of {args.rounds} rounds, milliseconds (loopback, {os.cpu_count()} CPUs)")
    print(f"  bare `ssh host true` (OpenSSH)            {med['ssh']:8.1f}")
    print(f"  bare paramiko connect + exec `true`       {med['paramiko']:8.1f}")
    print(f"    the same with TCP_NODELAY (as ours)     {med['paramiko_nodelay']:8.1f}")
    print(f"  warm: run -> hello                        {med['warm']:8.1f}   "
          f"= connect {med['connect']:.1f} + prepare {med['setup']:.1f} + agent start {med['start_to_hello']:.1f}")
    print(f"  cold: run -> hello (agent uploaded)       {med['cold']:8.1f}   "
          f"(prepare: inspect + upload + unpack {med['cold_setup']:.1f})")
    print(f"  warm / paramiko exec  {med['warm'] / med['paramiko']:5.2f}  (target <= 2.00)")
    print(f"  warm / paramiko exec with TCP_NODELAY  {med['warm'] / med['paramiko_nodelay']:5.2f}")
    print(f"  warm / ssh true       {med['warm'] / med['ssh']:5.2f}")
    print(f"  cold                  {med['cold'] / 1000:5.2f} s (target <= 1.50 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
