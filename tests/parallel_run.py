"""Running the suite in parallel (pytest-xdist): groups, a longest-first scheduler, a dead worker's tests.

A pytest plugin: tests/conftest.py takes its hooks, and tests/test_parallel_run.py loads it alone (-p) in a
small pytest run of its own to hold the scheduler to what a crashed worker must not do (hang the run).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# `make test` runs the tests on several worker processes (`-n 4 --dist loadgroup`, docs/development.md).
# Each test has its own tmp_path (data dir, sshd folder, client HOME) and its own ports, so most tests need
# nothing.  What a worker sets up once and many tests share is built once where it can be:
# - read-only things for the whole session: tests/session_cache.py (the stored runs of tests/ui);
# - a session fixture that starts daemons (a Slurm cluster, the PyInstaller build): its tests run on one
#   worker as one xdist group, so it starts once, not once per worker;
# - a module-scoped fixture defined in a test module: that module's tests run on one worker (one group).
# New tests that use these fixtures are grouped by this hook without a marker of their own.
SESSION_GROUPS = {"slurm_cluster": "slurm", "frozen_app": "frozen"}


def shared_group(item: pytest.Item) -> str | None:
    """The xdist group a test belongs to because of a fixture it shares with others, or None."""
    names = getattr(item, "fixturenames", ())
    for fixture, group in SESSION_GROUPS.items():
        if fixture in names:
            return group
    module = item.nodeid.split("::")[0]
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        if defs and defs[-1].scope == "module" and defs[-1].baseid == module:
            return module
    return None


def pytest_itemcollected(item: pytest.Item) -> None:
    if item.get_closest_marker("xdist_group") is None:
        group = shared_group(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))


# xdist's own `--dist loadgroup` tags each test id with its group, which pytest 9.2's structured test ids no
# longer take (its groups silently became single tests).  So each worker writes the groups it collected
# beside its basetemp, and the controller schedules with them: a group is one unit of work, on one worker.
def _groups_file(config: pytest.Config, worker: str) -> Path:
    return config._tmp_path_factory.getbasetemp().parent / f"xdist-groups-{worker}.json"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    groups = {}
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                        for m in item.iter_markers("xdist_group")})
        if names:
            groups[item.nodeid] = "_".join(names)
    path = _groups_file(config, worker)
    path.with_suffix(".tmp").write_text(json.dumps(groups))
    path.with_suffix(".tmp").replace(path)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: without it (-p no:xdist) nothing to do
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    base = config._tmp_path_factory.getbasetemp()

    class GroupScheduling(LoadScopeScheduling):
        """--dist loadgroup with the groups the workers wrote (see above); every other test on its own.

        Units go out longest first (by tests/durations.json): a 2-minute test handed out last would run
        alone at the end while the other workers sit idle.
        """

        _groups: dict[str, str] | None = None
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                self._groups = {}
                for path in sorted(base.glob("xdist-groups-*.json")):
                    self._groups.update(json.loads(path.read_text()))
            return self._groups.get(nodeid, nodeid)

        def remove_node(self, node) -> str | None:
            """A worker went away: at the end of the run, or dead (a segfault) while running a test.

            xdist 3.8's own version puts every unit the dead worker had back in the queue, finished ones
            too; near the end of a run the replacement worker is then handed a unit with nothing left to
            run, and waits for work while the controller waits for results: the run hangs until CI kills it
            (seen: a segfault at 97 % of a CI run, then 85 minutes of nothing).  Here, as in `--dist
            load`, the test that was running is the crash (xdist reports it failed, once: not run again),
            and only units with tests still to run go back.
            """
            workload = self.assigned_work.pop(node)
            left = [(scope, unit) for scope, unit in workload.items() if not all(unit.values())]
            if not left:
                return None
            crashed = next(nodeid for _, unit in left for nodeid, done in unit.items() if not done)
            for _, unit in left:
                unit.pop(crashed, None)
            self.workqueue.update((scope, unit) for scope, unit in left if unit and not all(unit.values()))
            for other in self.assigned_work:
                self._reschedule(other)
            return crashed

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:
                self._ordered = True
                cost = expected_seconds(recorded_durations())
                units = sorted(self.workqueue.items(), key=lambda unit: -sum(map(cost, unit[1])))
                self.workqueue.clear()
                self.workqueue.update(units)
            super()._assign_work_unit(node)

    return GroupScheduling(config, log)


# ------------------------------------------------------------------ each test's duration, for the scheduler
# tests/durations.json holds each test's seconds (setup + call + teardown) from a whole run on this 2-vCPU
# machine; `--record-durations PATH` writes a fresh one (docs/development.md).  A test not in it counts as the
# median: new tests need no entry, only a slow new one is worth recording.
DURATIONS = REPO / "tests" / "durations.json"
_DURATIONS: dict[str, float] = {}


def recorded_durations() -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(DURATIONS.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def expected_seconds(known: dict[str, float]):
    values = sorted(known.values())
    default = values[len(values) // 2] if values else 1.0
    return lambda nodeid: known.get(nodeid, default)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--record-durations", metavar="PATH", default=None,
                     help="write each test's seconds (setup + call + teardown) to PATH as JSON "
                          "(tests/durations.json orders the parallel run, longest first)")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _DURATIONS[report.nodeid] = _DURATIONS.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("--record-durations")
    if path and not os.environ.get("PYTEST_XDIST_WORKER") and _DURATIONS:
        Path(path).write_text(json.dumps({k: round(v, 2) for k, v in sorted(_DURATIONS.items())}, indent=0) + "\n")
