"""Each test's CPU-seconds, with every process it started: detached agents, sshd, Slurm steps, compiles.

The CPU table at the end of every pytest run (``tests/conftest.py``) counts the test's process and the
children it waited for; an agent started with ``--host local`` detaches (it is a daemon by design), so its
supervisor and workload processes, most of a run's CPU, are not in it.  This script runs pytest inside a
cgroup of its own (cgroup v1 ``cpuacct`` or cgroup v2, so it needs root), where every descendant stays
however it detaches, and reads the cgroup's CPU counter around each test.  After a test it waits until the
processes the test started have exited (agents finish their run and their flush after the CLI returns), so
the figure is the test's whole cost.  A module- or session-scoped fixture counts in the first test that
sets it up.

    python bench/cpu_per_test.py tests/e2e/test_local_runs.py -q            # one line per test, then total
    python bench/cpu_per_test.py --json out.json tests/e2e/test_ctrl_c.py     # also as JSON

Run it serially (no ``-n``: xdist workers would share the counter) and on a quiet machine if you can: CPU
seconds are far less sensitive to load than wall seconds, but not immune (cache misses, SMT siblings).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
ENV = "NEURONBENCH_CPU_CGROUP"
SETTLE_S = 60.0  # how long to wait for a test's detached processes to exit before reading the counter


# ------------------------------------------------------------------ the cgroup
def make_cgroup(name: str) -> Path:
    """A fresh cgroup for CPU accounting (v1 cpuacct, else v2), or SystemExit with why not."""
    for parent in (Path("/sys/fs/cgroup/cpuacct"), Path("/sys/fs/cgroup/unified"), Path("/sys/fs/cgroup")):
        if (parent / "cpuacct.usage").exists() or (parent / "cgroup.controllers").exists():
            path = parent / name
            try:
                path.mkdir()
            except OSError as exc:
                raise SystemExit(f"cannot make a cgroup at {path}: {exc} (run as root)") from exc
            return path
    raise SystemExit("no cgroup v1 cpuacct or cgroup v2 mounted under /sys/fs/cgroup")


def usage_s(cgroup: Path) -> float:
    """CPU-seconds (user + system) of every process that ever ran in ``cgroup``."""
    v1 = cgroup / "cpuacct.usage"
    if v1.exists():
        return int(v1.read_text()) / 1e9
    for line in (cgroup / "cpu.stat").read_text().splitlines():
        if line.startswith("usage_usec "):
            return int(line.split()[1]) / 1e6
    raise RuntimeError(f"no usage in {cgroup}")


def pids(cgroup: Path) -> set[int]:
    return {int(p) for p in (cgroup / "cgroup.procs").read_text().split()}


def settle(cgroup: Path, keep: set[int], timeout: float = SETTLE_S) -> set[int]:
    """Wait until the processes a test started are gone or idle; those still there after that.

    Idle means the cgroup used under 0.02 CPU-s in the last 2 s: a daemon of a module-scoped fixture (an
    sshd kept for the next test) stays, and the wait should not run to its timeout for it.
    """
    deadline = time.monotonic() + timeout
    window: list[tuple[float, float]] = []
    while True:
        left = pids(cgroup) - keep
        now, used = time.monotonic(), usage_s(cgroup)
        window = [(t, u) for t, u in window if now - t <= 2.0] + [(now, used)]
        quiet = now - window[0][0] >= 1.9 and used - window[0][1] < 0.02
        if not left or quiet or now > deadline:
            return left
        time.sleep(0.2)


# ------------------------------------------------------------------ the pytest plugin (-p bench.cpu_per_test)
_RESULTS: dict[str, float] = {}
_LEFT: dict[str, int] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    path = os.environ.get(ENV)
    if not path:
        yield
        return
    cgroup = Path(path)
    keep = pids(cgroup)
    before = usage_s(cgroup)
    yield
    left = settle(cgroup, keep)
    _RESULTS[item.nodeid] = usage_s(cgroup) - before
    if left:
        _LEFT[item.nodeid] = len(left)


def pytest_terminal_summary(terminalreporter) -> None:
    if not _RESULTS:
        return
    write = terminalreporter.write_line
    write("")
    write("CPU-s per test, every process it started included (bench/cpu_per_test.py):")
    for nodeid, seconds in sorted(_RESULTS.items(), key=lambda kv: -kv[1]):
        note = f"  ({_LEFT[nodeid]} processes left, idle or past {SETTLE_S:.0f} s)" if nodeid in _LEFT else ""
        write(f"{seconds:8.2f}  {nodeid}{note}")
    write(f"{sum(_RESULTS.values()):8.2f}  total over {len(_RESULTS)} tests")
    out = os.environ.get(ENV + "_JSON")
    if out:
        Path(out).write_text(json.dumps({k: round(v, 3) for k, v in _RESULTS.items()}, indent=0) + "\n")


# ------------------------------------------------------------------ the script
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="also write {test id: CPU-s} to PATH")
    args, pytest_args = parser.parse_known_args()
    if any(a == "-n" or a.startswith(("-n=", "--numprocesses")) for a in pytest_args):
        raise SystemExit("run serially: xdist workers would share one counter")
    cgroup = make_cgroup(f"nb-cpu-per-test-{os.getpid()}")
    try:
        (cgroup / "cgroup.procs").write_text(str(os.getpid()))  # the children inherit it
        env = dict(os.environ, **{ENV: str(cgroup)})
        if args.json:
            env[ENV + "_JSON"] = str(Path(args.json).resolve())
        start = usage_s(cgroup)
        code = subprocess.call([sys.executable, "-m", "pytest", "-p", "bench.cpu_per_test", "-p", "no:xdist",
                                *pytest_args], cwd=REPO, env=env)
        left = settle(cgroup, {os.getpid()})
        print(f"{usage_s(cgroup) - start:8.2f}  CPU-s of the whole pytest run (collection and start-up included)"
              + (f"; {len(left)} processes still running" if left else ""))
        return code
    finally:
        root = cgroup.parent
        for pid in pids(cgroup):
            try:
                (root / "cgroup.procs").write_text(str(pid))
            except OSError:
                pass
        try:
            cgroup.rmdir()
        except OSError as exc:
            print(f"left the cgroup {cgroup}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
