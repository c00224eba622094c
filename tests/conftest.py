"""Shared fixtures: isolated data dirs, the real agent zipapp, and a CLI runner."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.sshd import keygen, make_server, sshd_unavailable

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The probe contacts EC2 instance metadata only when DMI says this machine is EC2; point it at an
# empty sysfs so no test (and no agent it starts) ever reaches 169.254.169.254, even on an EC2 runner.
os.environ["NEURONBENCH_SYSFS_ROOT"] = tempfile.mkdtemp(prefix="nb-no-sysfs-")

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"
DOUBLES_BIN = REPO / "tests" / "doubles" / "bin"
PYTHON = sys.executable

@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    path = tmp_path / "nb-data"
    path.mkdir()
    return path


@pytest.fixture
def cli_env(data_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["NEURONBENCH_DATA_DIR"] = str(data_dir)
    # Never reach out to EC2 metadata from a test machine (the probe only would on EC2 anyway).
    env.pop("NEURONBENCH_IMDS_ENDPOINT", None)
    return env


@pytest.fixture
def run_cli(cli_env: dict[str, str]):
    """Run ``neuronbench ARGS`` as a user would (a fresh process) and capture its output."""

    def run(*args: str, timeout: float = 240, env: dict[str, str] | None = None) -> CliResult:
        proc = subprocess.run([PYTHON, "-m", "app", *args], capture_output=True, text=True, timeout=timeout,
                              env=env or cli_env, cwd=REPO)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    return run


@pytest.fixture
def app_paths(data_dir: Path):
    from app.paths import AppPaths

    return AppPaths.resolve(data_dir)


# ------------------------------------------------------------------ a real OpenSSH server (tests/e2e/sshd.py)
@dataclass
class SshClient:
    home: Path  # HOME of the client side: ~/.ssh/known_hosts lives here
    key: Path  # a private key the test servers accept


@pytest.fixture
def ssh_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SshClient:
    """An isolated client: HOME in a temp folder (no real known_hosts, no real keys) and no ssh-agent."""
    reason = sshd_unavailable()
    if reason:
        pytest.skip(reason)
    home = tmp_path / "client-home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return SshClient(home=home, key=keygen(tmp_path / "client_key"))


@pytest.fixture
def sshd(tmp_path: Path, ssh_client: SshClient):
    """A started sshd that accepts ``ssh_client.key``; the remote Python is this test's Python (it has torch)."""
    server = make_server(tmp_path / "sshd", ssh_client.key).start()
    yield server
    server.stop()


@pytest.fixture
def ssh_env(cli_env: dict[str, str], ssh_client: SshClient) -> dict[str, str]:
    """Environment for CLI subprocesses that talk to the test sshd."""
    env = dict(cli_env)
    env["HOME"] = str(ssh_client.home)
    env.pop("SSH_AUTH_SOCK", None)
    return env


# ------------------------------------------------------------------ a real Slurm (tests/cluster/slurm_cluster.py)
@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory: pytest.TempPathFactory):
    """munged, slurmctld, two slurmd nodes and a login sshd, for the whole session; all stopped at its end."""
    from tests.cluster.slurm_cluster import slurm_unavailable, start_slurm_cluster

    reason = slurm_unavailable()
    if reason:
        pytest.skip(reason)
    cluster = start_slurm_cluster(tmp_path_factory.mktemp("slurm"))
    yield cluster
    cluster.stop()


@pytest.fixture
def slurm(slurm_cluster, ssh_client: SshClient):
    """The session's Slurm, idle, with this test's client key let in to its login node."""
    slurm_cluster.wait_idle()
    slurm_cluster.authorize(Path(f"{ssh_client.key}.pub"))
    yield slurm_cluster
    slurm_cluster.command("scancel", "--user", "root")
