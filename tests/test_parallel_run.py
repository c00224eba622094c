"""The parallel run's scheduler (tests/parallel_run.py) when a worker dies: the run ends, nothing is lost.

A segfault in a worker (a Qt or torch extension) must cost one failed test, not the whole CI run: with
xdist 3.8's own `--dist loadgroup` a worker that died near the end left the run waiting forever.  A small
pytest run of its own, on two workers, with the plugin loaded alone.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TESTS = '''
import os, signal, time
import pytest

@pytest.mark.parametrize("i", range(8))
def test_quick(i):
    time.sleep(0.05)

@pytest.mark.xdist_group("shared")
def test_group_1_dies():
    os.kill(os.getpid(), signal.SIGSEGV)

@pytest.mark.xdist_group("shared")
def test_group_2_after_the_crash():
    pass

@pytest.mark.xdist_group("shared")
def test_group_3_after_the_crash():
    pass

def test_zz_last_dies():
    time.sleep(1.0)  # the other worker has run out of work and been shut down by now
    os.kill(os.getpid(), signal.SIGSEGV)
'''


def test_a_dead_worker_fails_its_test_once_and_the_rest_still_run(tmp_path: Path) -> None:
    (tmp_path / "test_dying.py").write_text(TESTS)
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONFAULTHANDLER="0")
    # Its own session: a hung run's workers go with its controller (killpg), none left behind.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "tests.parallel_run", "-p", "no:cacheprovider", "-p", "no:randomly",
         "-n", "2", "--dist", "loadgroup", "-rf", "-q", "test_dying.py"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        raise AssertionError(f"the run hung after a worker died:\n{out[-3000:]}") from None
    summary = out.strip().splitlines()[-1]
    assert proc.returncode == 1, out[-3000:]
    assert "2 failed, 10 passed" in summary, out[-3000:]
    failed = sorted(line.split()[1] for line in out.splitlines() if line.startswith("FAILED"))
    assert failed == ["test_dying.py::test_group_1_dies", "test_dying.py::test_zz_last_dies"]
