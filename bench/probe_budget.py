"""How long the probe's time budgets really take, on this machine, now: the wall-clock side of the probe tests.

tests/agent/test_probe.py checks the budgets' mechanism (the timeout each tool and IMDS request is given,
the hung tool killed and named, nothing asked once the budget is spent); a test that asserted the wall
clock would fail on a loaded machine, so the figures live here.  Four cases, each timed ``--repeat`` times
(median and worst printed) against the budget it should stay near:

* ``collect_env()`` off EC2 (no IMDS client at all): tens of milliseconds of look-ups
* a hung ``neuron-ls`` (the test double in ``hang`` mode) under a 0.5 s tool timeout, plus the other tool
  doubles on PATH (``nvidia-smi``'s start-up is about 0.4 s of it)
* an IMDS that accepts connections and never answers, against the 1.0 s budget
* an IMDS whose every GET takes 0.6 s: the budget spans all requests, so about 1.0 s, not 1.8 s

    python bench/probe_budget.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "agent"))

from imds_server import ImdsServer, SilentServer  # noqa: E402

from remote_agent.probe import collect_env, commands, imds  # noqa: E402

DOUBLES = REPO / "tests" / "doubles" / "bin"


def timed(repeat: int, setup, run) -> list[float]:
    times = []
    for _ in range(repeat):
        with setup() as ready:
            started = time.monotonic()
            run(ready)
            times.append(time.monotonic() - started)
    return times


class Env:
    """Environment variables set for one case, restored after it."""

    def __init__(self, **values: str) -> None:
        self.values, self.saved = values, {}

    def __enter__(self):
        for key, value in self.values.items():
            self.saved[key] = os.environ.get(key)
            os.environ[key] = value
        return self

    def __exit__(self, *exc):
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Served:
    def __init__(self, server_class, **kwargs) -> None:
        self.server = server_class(**kwargs)

    def __enter__(self):
        self.server.__enter__()
        self.env = Env(NEURONBENCH_IMDS_ENDPOINT=self.server.url).__enter__()
        return self.server

    def __exit__(self, *exc):
        self.env.__exit__(*exc)
        self.server.__exit__(*exc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    no_sysfs = tempfile.mkdtemp(prefix="nb-bench-no-sysfs-")
    os.environ["NEURONBENCH_SYSFS_ROOT"] = no_sysfs  # off EC2: DMI says nothing
    os.environ.pop("NEURONBENCH_IMDS_ENDPOINT", None)
    path = os.environ.get("PATH", "")
    commands.TIMEOUT_S = 0.5
    cases = [
        ("collect_env() off EC2", None, lambda: Env(), lambda _: collect_env()),
        ("hung neuron-ls (0.5 s timeout) + other tools", 0.5,
         lambda: Env(PATH=f"{DOUBLES}{os.pathsep}{path}", NEURONBENCH_FAKE_NEURON_LS_MODE="hang"),
         lambda _: collect_env(quick=True)),
        (f"silent IMDS, {imds.BUDGET_S:.1f} s budget", imds.BUDGET_S, lambda: Served(SilentServer),
         lambda _: collect_env()),
        (f"IMDS GETs of 0.6 s each, {imds.BUDGET_S:.1f} s budget", imds.BUDGET_S,
         lambda: Served(ImdsServer, get_delay=0.6), lambda _: collect_env()),
    ]
    print(f"{'case':<44} {'median s':>9} {'worst s':>8} {'budget s':>9}")
    for name, budget, setup, run in cases:
        times = timed(args.repeat, setup, run)
        shown = "-" if budget is None else f"{budget:.1f}"
        print(f"{name:<44} {statistics.median(times):9.3f} {max(times):8.3f} {shown:>9}")
    print(f"({args.repeat} runs each; load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
