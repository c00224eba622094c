"""A real Slurm on this machine for the Slurm tests: munged, slurmctld and two slurmd "nodes", no systemd.

Everything lives in one folder of the test session: munge's key and socket, a
slurm.conf written here, the controller's state, each node's spool, pid and log
files.  The nodes ``n1`` and ``n2`` are two ``slurmd -N`` on their own ports and
loopback addresses (127.0.0.2, 127.0.0.3), so a 2-node ``sbatch`` + ``srun``
really allocates two nodes.  Processes are tracked by their parents
(``proctrack/linuxproc``), not cgroups.  A test sshd on 127.0.0.1 is the login
node: its sessions get ``SLURM_CONF``, so ``sbatch``/``squeue`` run over SSH
reach this Slurm.  Every Slurm command is given ``SLURM_CONF`` (without it
Slurm would look for a configless controller in DNS SRV records).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e.sshd import SshServer, free_port, keygen, make_server, sshd_unavailable

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo")
NODES = (("n1", "127.0.0.2"), ("n2", "127.0.0.3"))
PARTITION = "bench"


def _tool(name: str) -> str | None:
    return shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/sbin/{name}") if os.path.exists(p)), None)


def slurm_unavailable() -> str | None:
    """Why a test Slurm cannot run here, or None."""
    if os.geteuid() != 0:
        return "the test Slurm runs its daemons as root (munged, slurmctld, slurmd): run the tests as root"
    missing = [name for name in DAEMONS + CLIENTS if _tool(name) is None]
    if missing:
        return (f"Slurm is not installed ({', '.join(missing)} missing): tests/system_packages.sh installs "
                f"slurmctld slurmd slurm-client munge")
    return sshd_unavailable()


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    login: SshServer  # the login node: sshd on 127.0.0.1 whose sessions see SLURM_CONF
    client_key: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def command(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster (never without SLURM_CONF)."""
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=self.env, check=False)

    def jobs(self) -> list[str]:
        out = self.command("squeue", "-h", "-o", "%i %T")
        return [line for line in out.stdout.splitlines() if line.strip()]

    def wait_idle(self, timeout: float = 60) -> None:
        """Until no job is left and both nodes are idle again (between tests)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            states = self.command("sinfo", "-h", "-N", "-o", "%T").stdout.split()
            if not self.jobs() and states and all(s == "idle" for s in states):
                return
            time.sleep(0.2)
        raise AssertionError(f"the test Slurm is not idle: {self.jobs()} "
                             f"{self.command('sinfo', '-N').stdout}")

    def authorize(self, public_key: Path) -> None:
        """Let another client key log in to the login node (each test's client has a key of its own)."""
        keys = self.login.root / "authorized_keys"
        text = public_key.read_text()
        if text not in keys.read_text():
            with open(keys, "a") as handle:
                handle.write(text)

    def log_tail(self) -> str:
        parts = []
        for log in sorted((self.root / "log").glob("*")):
            parts.append(f"--- {log.name}\n" + "\n".join(log.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(parts)

    def stop(self) -> None:
        """Cancel what is left, wait for the jobs' processes to go, then stop every daemon."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            self.command("scancel", "--user", "root", "--full")
            deadline = time.monotonic() + 30
            while self.jobs() and time.monotonic() < deadline:
                time.sleep(0.2)
        self.login.stop()
        for name in reversed(list(self.procs)):  # nodes first, the controller, munged last
            proc = self.procs[name]
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _write_conf(root: Path, munge_socket: Path) -> Path:
    host = socket.gethostname().split(".")[0]
    cpus = os.cpu_count() or 1
    ports = {"ctld": free_port(), **{name: free_port() for name, _addr in NODES}}
    nodes = "\n".join(f"NodeName={name} NodeHostname={host} NodeAddr={addr} Port={ports[name]} CPUs={cpus} "
                      f"State=UNKNOWN" for name, addr in NODES)
    (root / "plugstack.conf").write_text("")
    conf = root / "slurm.conf"
    conf.write_text(f"""\
ClusterName=neuronbench-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports['ctld']}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={munge_socket}
StateSaveLocation={root / 'state'}
SlurmdSpoolDir={root / 'spool'}/%n
SlurmctldPidFile={root / 'slurmctld.pid'}
SlurmdPidFile={root / 'slurmd-%n.pid'}
SlurmctldLogFile={root / 'log' / 'slurmctld.log'}
SlurmdLogFile={root / 'log' / 'slurmd-%n.log'}
PlugStackConfig={root / 'plugstack.conf'}
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
{nodes}
PartitionName={PARTITION} Nodes={','.join(name for name, _addr in NODES)} Default=YES MaxTime=INFINITE State=UP
""")
    return conf


def _start(cluster: SlurmCluster, name: str, argv: list[str]) -> None:
    log = open(cluster.root / "log" / f"{name}.out", "ab")
    cluster.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=cluster.env,
                                           stdin=subprocess.DEVNULL)


def start_slurm_cluster(root: Path) -> SlurmCluster:
    """Start munged, slurmctld, the two slurmd and the login sshd; return once both nodes are idle."""
    for sub in ("munge", "state", "spool", "log", "login-home"):
        (root / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
    for name, _addr in NODES:
        (root / "spool" / name).mkdir(exist_ok=True)
    os.chmod(root, 0o755)  # munged wants to reach its socket's folder
    os.chmod(root / "munge", 0o755)
    key = root / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    munge_socket = root / "munge" / "munge.socket"
    conf = _write_conf(root, munge_socket)
    client_key = keygen(root / "login_client_key")
    login = make_server(root / "login", client_key, home=root / "login-home", env={"SLURM_CONF": str(conf)})
    cluster = SlurmCluster(root=root, conf=conf, login=login, client_key=client_key)
    try:
        _start(cluster, "munged", [_tool("munged") or "munged", "--foreground", "--force",
                                   f"--socket={munge_socket}", f"--key-file={key}",
                                   f"--pid-file={root / 'munge' / 'munged.pid'}",
                                   f"--log-file={root / 'log' / 'munged.log'}",
                                   f"--seed-file={root / 'munge' / 'munged.seed'}"])
        _wait(cluster, lambda: munge_socket.exists(), "munged did not create its socket")
        _start(cluster, "slurmctld", [_tool("slurmctld") or "slurmctld", "-D", "-i", "-f", str(conf)])
        _wait(cluster, lambda: cluster.command("scontrol", "ping").stdout.count("UP") > 0,
              "slurmctld does not answer")
        for name, _addr in NODES:
            _start(cluster, f"slurmd-{name}", [_tool("slurmd") or "slurmd", "-D", "-N", name, "-f", str(conf)])
        cluster.login.start()
        _wait(cluster, lambda: cluster.command("sinfo", "-h", "-N", "-o", "%T").stdout.split() == ["idle", "idle"],
              "the two slurmd nodes did not come up idle")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait(cluster: SlurmCluster, ready, what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        dead = [name for name, proc in cluster.procs.items() if proc.poll() is not None]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(f"{what} ({', '.join(dead) + ' exited; ' if dead else ''}logs:\n{cluster.log_tail()})")
        time.sleep(0.1)
