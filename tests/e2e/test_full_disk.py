"""A full disk on the host (issue 16): refused up front below a floor of free space, and named in one sentence
(host, folder, free space) whenever it fills: during the upload, at a run's start, mid-run; nothing left running,
every event received kept.

The host's disk is a small tmpfs on the remote HOME's ``~/.cache``, mounted in a private mount namespace of the test
sshd (root only): sessions see it, the machine's own disks are never filled."""
from __future__ import annotations

import errno
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remote_agent.orphan import run_processes
from tests.conftest import REPO
from tests.e2e.conftest import add_host, remote_profile
from tests.e2e.sshd import SshServer, make_server, tmpfs_unavailable
from tests.helpers import tiny_model_flags

pytestmark = pytest.mark.slow

TRAIN = ["--workload", "train", *tiny_model_flags(), "--backend", "cpu", "--workers", "0", "--batch-size", "4",
         "--warmup", "1", "--accept-new-host-key"]


@pytest.fixture
def small_disk(tmp_path: Path, ssh_client, data_dir):
    """``small_disk("size=8m")``: the test sshd (host ``box``) with a tmpfs of those options as its ~/.cache."""
    reason = tmpfs_unavailable()
    if reason:
        pytest.skip(reason)
    servers: list[SshServer] = []

    def start(options: str, sftp: bool = True) -> SshServer:
        server = make_server(tmp_path / "sshd", ssh_client.key, sftp=sftp)
        server.tmpfs = (server.home / ".cache", options)
        servers.append(server.start())
        add_host(data_dir, remote_profile(server))
        return server

    yield start
    for server in servers:
        server.stop()


def errors(stderr: str) -> list[str]:
    """The CLI's error lines, and any line indented under them (a traceback, a stderr tail)."""
    lines = stderr.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("neuronbench: error:")), len(lines))
    return lines[start:]


def stored_runs(run_cli, env) -> list[dict]:
    return run_cli("runs", "list", "--json", env=env).json()["runs"]


def test_a_disk_too_small_for_the_agent_is_refused_before_anything_is_uploaded(small_disk, run_cli, ssh_env):
    server = small_disk("size=8m")
    out = run_cli("run", "--host", "box", *TRAIN, "--steps", "3", env=ssh_env)
    folder = f"{server.home}/.cache/neuronbench"
    assert out.code == 1
    assert errors(out.stderr) == [
        f"neuronbench: error: run failed on box: box has only 8.0 MiB free on the disk holding {folder}; "
        f"NeuronBench needs at least 32.0 MiB there for its agent (and more for each run): free some space there "
        f"and try again"]
    assert list(server.disk().iterdir()) == []  # nothing was written there
    assert [r["status"] for r in stored_runs(run_cli, ssh_env)] == ["failed"]


def test_a_run_is_refused_below_the_floor_where_runs_live(small_disk, run_cli, ssh_env):
    server = small_disk("size=48m")
    out = run_cli("run", "--host", "box", *TRAIN, "--steps", "3", env=ssh_env)
    assert out.code == 1
    [line] = errors(out.stderr)
    runs = f"{server.home}/.cache/neuronbench/runs"
    assert line.startswith("neuronbench: error: run failed on box: only 4") and line.endswith(
        f" MiB free on the disk holding {runs}; a run needs at least 100 MiB there (its event log and the workload's "
        f"output): free some space there"), line
    assert not (server.disk() / "neuronbench" / "runs").exists() or \
        list((server.disk() / "neuronbench" / "runs").iterdir()) == []


@pytest.mark.parametrize("sftp", [True, False], ids=["sftp", "exec-channel"])
def test_an_upload_into_a_full_disk_names_it(small_disk, run_cli, ssh_env, sftp):
    """Bytes to spare but no inode left: the pre-flight passes, the upload itself hits ENOSPC."""
    server = small_disk("size=200m,nr_inodes=3", sftp=sftp)
    out = run_cli("run", "--host", "box", *TRAIN, "--steps", "3", env=ssh_env)
    assert out.code == 1
    assert errors(out.stderr) == [
        f"neuronbench: error: run failed on box: could not upload the agent on box: no space left on the disk "
        f"holding {server.home}/.cache/neuronbench/agent (200 MiB free, and no inode free): free some space there "
        f"and try again"]


def fill(folder: Path) -> int:
    """Write zeros into ``folder`` until its disk is full; the bytes written."""
    written = 0
    with open(folder / "filler", "wb", buffering=0) as handle:
        while True:
            try:
                written += handle.write(b"\0" * (1 << 20)) or 0  # the last one short, the next ENOSPC
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                return written


def test_a_disk_that_fills_mid_run_ends_the_run_with_that_sentence_and_nothing_left(small_disk, run_cli, ssh_env,
                                                                                    tmp_path):
    server = small_disk("size=120m")
    events_path = tmp_path / "events.jsonl"
    with open(tmp_path / "stderr", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "app", "run", "--host", "box", *TRAIN, "--steps", "100000",
                                 "--nproc", "2", "--events", str(events_path)], env=ssh_env, cwd=REPO,
                                stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 240
        while sum('"type":"step"' in line for line in (events_path.read_text().splitlines()
                                                       if events_path.exists() else [])) < 3:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr").read_text()
            time.sleep(0.05)
        run_id = json.loads(events_path.read_text().splitlines()[0])["run_id"]
        assert len(run_processes(run_id)) >= 4
        assert fill(server.disk()) > 0
        code = proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    stderr = (tmp_path / "stderr").read_text()
    folder = f"{server.home}/.cache/neuronbench/runs/{run_id}"
    assert code == 1, stderr
    assert errors(stderr) == [f"neuronbench: error: run failed on box: no space left on the disk holding {folder} "
                              f"(0 B free now): the run was stopped; free some space there and run again"], stderr
    deadline = time.monotonic() + 30  # the supervisor exits right after writing its end
    while run_processes(run_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run_processes(run_id) == []
    # Every event received is kept, in the store as on the host, and the run ends failed, with that reason.
    received = [json.loads(line) for line in events_path.read_text().splitlines()]
    assert [e["seq"] for e in received] == list(range(1, len(received) + 1))
    assert received[-1]["type"] == "end" and received[-1]["status"] == "failed"
    shown = [json.loads(line) for line in run_cli("runs", "show", run_id, "--events", env=ssh_env).stdout.splitlines()]
    assert shown == received
    on_host = [json.loads(line) for line in (server.disk() / "neuronbench" / "runs" / run_id / "events.jsonl")
               .read_text().splitlines()]
    assert on_host == received
    [stored] = stored_runs(run_cli, ssh_env)
    assert stored["status"] == "failed"
