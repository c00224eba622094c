"""A real OpenSSH server on 127.0.0.1 for the SSH tests, isolated from this machine's own accounts.

Each server has its own folder: host key, authorized_keys, sshd_config, pid
file and log.  The login user's HOME (and so the remote ``~/.cache/neuronbench``)
is a folder of the test, set with sshd's ``SetEnv``, so the real home is never
touched.  The client side (``~/.ssh/known_hosts``, default keys) is isolated by
pointing the test process's HOME at another folder (see ``ssh_client_home``).
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import parent_pids

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
PRIVSEP_DIR = Path("/run/sshd")  # Debian's sshd refuses to start without it (systemd makes it at boot)


def sshd_unavailable() -> str | None:
    """Why a test sshd cannot run here, or None."""
    if not os.path.exists(SSHD) or not shutil.which("ssh-keygen"):
        return "openssh-server is not installed (tests/system_packages.sh installs it)"
    if not PRIVSEP_DIR.is_dir() and os.geteuid() != 0:
        return f"sshd needs {PRIVSEP_DIR}, which only root can create"
    return None


def tmpfs_unavailable() -> str | None:
    """Why a server cannot have a tmpfs of its own here (SshServer.tmpfs), or None."""
    if os.geteuid() != 0:
        return "a private mount namespace with a tmpfs needs root"
    if not shutil.which("unshare"):
        return "unshare (util-linux) is not installed"
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                            "mount -t tmpfs -o size=64k neuronbench-probe /mnt"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a private mount namespace here: {probe.stderr.strip()}"
    return None


def keygen(path: Path, passphrase: str = "") -> Path:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", "neuronbench-test", "-f", str(path)],
                   check=True)
    return path


def free_port(address: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return sock.getsockname()[1]


class PortTaken(Exception):
    """sshd could not bind its port: another process took it after free_port() found it free."""


@dataclass
class SshServer:
    root: Path
    port: int
    home: Path  # the login user's HOME for sessions of this server
    host_key: Path
    client_key: Path
    user: str
    proc: subprocess.Popen | None = None
    address: str = "127.0.0.1"
    netns: str | None = None  # started inside this network namespace (tests/e2e/netns.py)
    # (folder, mount options): a tmpfs on that folder, seen only by this server and its sessions (a private
    # mount namespace, root only), e.g. a small disk for ~/.cache: see tmpfs_unavailable() and disk().
    tmpfs: tuple[Path, str] | None = None

    @property
    def log(self) -> Path:
        return self.root / "sshd.log"

    def disk(self) -> Path:
        """The tmpfs folder as this test process reaches it: through the server's own view of the file system."""
        assert self.tmpfs is not None and self.proc is not None
        return Path(f"/proc/{self.proc.pid}/root") / self.tmpfs[0].relative_to("/")

    def start(self, timeout: float = 10.0) -> SshServer:
        """Start sshd; if its port was taken meanwhile (free_port's port is free only when asked, and parallel
        test workers ask too), start it again on another."""
        for _attempt in range(5):
            try:
                return self._start(timeout)
            except PortTaken:
                self.port = free_port("127.0.0.1" if self.netns else self.address)
                config = self.root / "sshd_config"
                lines = config.read_text().splitlines(keepends=True)
                config.write_text("".join(f"Port {self.port}\n" if line.startswith("Port ") else line
                                          for line in lines))
        raise RuntimeError(f"sshd found no free port: {self.log.read_text(errors='replace')}")

    def _start(self, timeout: float) -> SshServer:
        prefix = ["ip", "netns", "exec", self.netns] if self.netns else []
        if self.tmpfs is not None:
            folder, options = self.tmpfs
            folder.mkdir(parents=True, exist_ok=True)
            prefix += ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                       'mount -t tmpfs -o "$1" neuronbench-test "$2" && shift 2 && exec "$@"', "sh", options,
                       str(folder)]
        logged = self.log.stat().st_size if self.log.exists() else 0
        self.proc = subprocess.Popen([*prefix, SSHD, "-D", "-e", "-f", str(self.root / "sshd_config")],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "ab"))
        deadline = time.monotonic() + timeout
        while "Server listening" not in (text := self.log.read_bytes()[logged:].decode(errors="replace")):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                if self.proc.poll() is not None and "Address already in use" in text:
                    raise PortTaken(self.port)
                raise RuntimeError(f"sshd did not start: {self.log.read_text(errors='replace')}")
            time.sleep(0.02)
        return self

    def session_pids(self) -> list[int]:
        """The sshd processes serving connections (children of the listener)."""
        assert self.proc is not None
        return [pid for pid, parent in parent_pids().items() if parent == self.proc.pid]

    def kill_sessions(self) -> list[int]:
        """Drop every connection the hard way: SIGKILL the sshd processes serving them."""
        pids = self.session_pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return pids

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.kill_sessions()
            self.proc.terminate()
            self.proc.wait(timeout=10)

    def profile(self, name: str = "box", **overrides):
        from app.core.hosts import HostProfile

        fields = {"name": name, "hostname": self.address, "port": self.port, "user": self.user,
                  "identity_file": str(self.client_key)}
        fields.update(overrides)
        return HostProfile(**fields)


def make_server(root: Path, client_key: Path, home: Path | None = None, extra_config: str = "",
                address: str = "127.0.0.1", netns: str | None = None, sftp: bool = True,
                env: dict[str, str] | None = None) -> SshServer:
    """Configure (not start) an sshd in ``root`` that lets ``client_key`` log in as the current user.

    ``address``: any of 127.0.0.0/8 (all loopback on Linux), so several servers make several "machines".
    ``sftp=False`` leaves out the SFTP subsystem, as hardened images do.
    ``env``: more variables every session sees (sshd takes only the first ``SetEnv`` line, so they join it).
    """
    if not PRIVSEP_DIR.is_dir():
        PRIVSEP_DIR.mkdir(mode=0o755, parents=True)
    root.mkdir(parents=True, exist_ok=True)
    home = home or root / "home"
    home.mkdir(parents=True, exist_ok=True)
    host_key = keygen(root / "host_key")
    (root / "authorized_keys").write_text(Path(f"{client_key}.pub").read_text())
    no_ec2 = root / "sysfs"  # the remote probe must never think it is on EC2 and call IMDS
    no_ec2.mkdir(exist_ok=True)
    user = pwd.getpwuid(os.getuid()).pw_name
    # sshd starts each session with an environment of its own: the tests' thread count (tests/conftest.py)
    # reaches the remote agent only this way.
    session_env = {k: os.environ[k] for k in ("OMP_NUM_THREADS",) if k in os.environ}
    session_env.update(env or {})
    port = free_port("127.0.0.1" if netns else address)  # a namespace of the test's own has every port free
    subsystem = "Subsystem sftp internal-sftp" if sftp else "# no SFTP subsystem (a hardened image)"
    (root / "sshd_config").write_text(f"""\
Port {port}
ListenAddress {address}
HostKey {host_key}
PidFile {root / 'sshd.pid'}
AuthorizedKeysFile {root / 'authorized_keys'}
AllowUsers {user}
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
PrintMotd no
AllowTcpForwarding yes
{subsystem}
SetEnv HOME={home} NEURONBENCH_SYSFS_ROOT={no_ec2}{"".join(f" {k}={v}" for k, v in session_env.items())}
{extra_config}
""")
    return SshServer(root=root, port=port, home=home, host_key=host_key, client_key=client_key, user=user,
                     address=address, netns=netns)
