"""Shared fixtures: isolated data dirs, the real agent zipapp, and a CLI runner."""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.sshd import keygen, make_server, sshd_unavailable
from tests.parallel_run import (  # noqa: F401  (hooks, found by name here)
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_itemcollected,
    pytest_runtest_logreport,
    pytest_sessionfinish,
    pytest_xdist_make_scheduler,
)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# One intra-op thread for torch in every process the tests start (agents, workers, torchrun ranks; over SSH
# and Slurm too: tests/e2e/sshd.py passes it on).  The tests' models are tiny and four pytest workers share
# two CPUs: a second OpenMP thread only spin-waits between tiny ops.  100 steps of the tiny ViT cost 15.8
# CPU-s with torch's default two threads and 0.5 with one (docs/development.md, "What each change saved").
# No test measures throughput against a thread count; a test that needs threads sets its own.
os.environ.setdefault("OMP_NUM_THREADS", "1")
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


@pytest.fixture(autouse=True)
def _qt_garbage_collected_on_the_gui_thread(request: pytest.FixtureRequest) -> None:
    """As the app does (make_application): wherever a test has a QApplication, a worker thread (the bridge's,
    moto's server, paramiko's) never collects cycles holding Qt objects (app/ui/gc_on_gui_thread.py: a freeze
    or a crash in ~QObject).  Here, not in tests/ui/conftest.py: tests/ec2/test_gui.py opens the real window
    beside a moto server thread, and a worker that ran it before any tests/ui test had no such guard."""
    if "qapp" in request.fixturenames:
        request.getfixturevalue("qapp")
        from app.ui.gc_on_gui_thread import collect_garbage_on_gui_thread

        collect_garbage_on_gui_thread()


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


# ------------------------------------------------------------------ running in parallel (pytest-xdist)
# Groups, the longest-first scheduler, a dead worker's tests and --record-durations: tests/parallel_run.py
# (its hooks are imported at the top of this file: pytest finds a conftest's hooks by name).


# ------------------------------------------------------------------ CPU per test, beside --durations
# Wall time says how long a test waited; CPU time says what it cost the machine (2 vCPUs here, shared).
# Each phase's CPU (this process and the children it waited for: agents, sshd, compiles) rides on its report
# (user_properties, so xdist carries it to the controller); the run ends with the total and the top 10.
def _cpu_seconds() -> float:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + children.ru_utime + children.ru_stime


_CPU_MARK: list[float] = []
_SESSION_START: list[float] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    _SESSION_START[:] = [time.monotonic()]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _CPU_MARK[:] = [_cpu_seconds()]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    outcome = yield
    now = _cpu_seconds()
    if _CPU_MARK:
        outcome.get_result().user_properties.append(("cpu_s", round(now - _CPU_MARK[0], 3)))
    _CPU_MARK[:] = [now]


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    per_test: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key == "cpu_s":
                    per_test[report.nodeid] = per_test.get(report.nodeid, 0.0) + value
    if not per_test or not _SESSION_START:
        return
    total, wall = sum(per_test.values()), time.monotonic() - _SESSION_START[0]
    terminalreporter.write_sep("=", "CPU of the tests (their processes and waited-for children)")
    terminalreporter.write_line(f"{total:.0f} CPU-s in {wall:.0f} s wall: {total / wall:.2f} CPUs busy on average "
                                f"(of {os.cpu_count()}), over {len(per_test)} tests")
    for nodeid, seconds in sorted(per_test.items(), key=lambda kv: -kv[1])[:10]:
        terminalreporter.write_line(f"{seconds:8.2f} CPU-s  {nodeid}")
