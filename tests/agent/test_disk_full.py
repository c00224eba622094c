"""The agent on a disk that fills (issue 16): the run ends with one sentence naming the folder and its free space,
a stream whose seqs run on to its ``end``, and no traceback -- whichever write meets the full disk first.

Each run has a tmpfs of its own as the agent's home, in a private mount namespace (root only), filled until only
a given number of pages is free: tmpfs counts whole pages, so the point where the disk fills is exact."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from remote_agent.protocol import iter_events
from tests.e2e.sshd import tmpfs_unavailable

pytestmark = pytest.mark.skipif(bool(tmpfs_unavailable()), reason=tmpfs_unavailable() or "")

PAGE = os.sysconf("SC_PAGE_SIZE")
RESERVE_PAGES = (1 << 20) // PAGE  # remote_agent.diskspace.RESERVE_BYTES
RUN_ID = "20261124-000000-d15c00"
SPEC = {"workload": "train", "model": "vit_tiny_patch16_224", "backend": "cpu", "batch_sizes": [2], "steps": 5,
        "warmup": 1, "workers": 0, "model_args": {"img_size": 32, "patch_size": 8, "depth": 2, "embed_dim": 64,
                                                  "num_heads": 2}}
# Inside the namespace: fill the tmpfs at $1, leave $2 pages free, then become the agent (argv from $3 on).
FILL_THEN_RUN = """
import errno, os, sys
home, pages, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
path = os.path.join(home, "filler")
with open(path, "wb", buffering=0) as handle:
    try:
        while True:
            handle.write(b"\\0" * 65536)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
os.truncate(path, os.path.getsize(path) - pages * os.sysconf("SC_PAGE_SIZE"))
os.execv(argv[0], argv)
"""


def run_on_a_disk_with(tmp_path, free_pages: int, steps: int = 5):
    """``agent run`` with that many pages free where its runs live: (exit code, events, stderr, home)."""
    home = tmp_path / "agent-home"
    home.mkdir()
    env = dict(os.environ, NEURONBENCH_AGENT_HOME=str(home), NEURONBENCH_MIN_FREE_MB="0")  # not the floor, here
    proc = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         'mount -t tmpfs -o size=8m neuronbench-test "$1" && shift && exec "$@"', "sh", str(home),
         sys.executable, "-c", FILL_THEN_RUN, str(home), str(free_pages),
         sys.executable, "-m", "remote_agent", "run", "--run-id", RUN_ID],
        input=json.dumps(dict(SPEC, steps=steps)).encode(), capture_output=True, timeout=240, env=env)
    events = list(iter_events(proc.stdout.splitlines()))
    return proc.returncode, events, proc.stderr.decode(errors="replace"), home


def sentence(events: list[dict]) -> str:
    [error] = [e for e in events if e["type"] == "error"]
    return error["message"]


def test_no_room_to_start_the_run_is_refused_with_the_sentence(tmp_path):
    code, events, stderr, home = run_on_a_disk_with(tmp_path, RESERVE_PAGES + 2)  # reserve, spec, but no hello
    assert code == 2 and stderr == ""
    assert [e["type"] for e in events] == ["hello", "error", "end"] and events[-1]["status"] == "failed"
    assert sentence(events).startswith(f"no space left on the disk holding {home}/runs (")
    assert sentence(events).endswith("): the run was stopped; free some space there and run again")


def test_a_supervisor_that_cannot_write_ends_the_run_from_its_reserve(tmp_path):
    """Room for the run folder and its hello, none for the supervisor's own writes: its reserve holds the end."""
    code, events, stderr, home = run_on_a_disk_with(tmp_path, RESERVE_PAGES + 3)
    assert code == 0 and stderr == "", stderr
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1] == {**events[-1], "type": "end", "status": "failed"}
    assert not any("workload process" in (e.get("message") or "") for e in events)  # nothing was started
    folder = f"{home}/runs/{RUN_ID}"
    assert sentence(events) == f"no space left on the disk holding {folder} (0 B free now): the run was stopped; " \
                               f"free some space there and run again"
    [result] = [e["result"] for e in events if e["type"] == "result"]
    assert result["status"] == "failed" and result["error"]["message"] == sentence(events)


@pytest.mark.slow
@pytest.mark.parametrize("free_pages", [RESERVE_PAGES + 4, RESERVE_PAGES + 8])
def test_a_disk_that_fills_under_the_workload_ends_the_run_with_the_sentence(tmp_path, free_pages):
    """Whichever meets the full disk first (the event log, a worker's side file, its output): the same end."""
    code, events, stderr, home = run_on_a_disk_with(tmp_path, free_pages, steps=100000)
    assert code == 0 and stderr == "", stderr
    assert any("workload process" in (e.get("message") or "") for e in events)
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert events[-1] == {**events[-1], "type": "end", "status": "failed"}
    assert sentence(events) == f"no space left on the disk holding {home}/runs/{RUN_ID} (0 B free now): the run " \
                               f"was stopped; free some space there and run again"
