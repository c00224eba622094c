"""A host's event log with a bad line in it: ``runs attach`` over a real sshd refuses that line and goes on.

The log is a real recorded run (tests/data/runs/train-cpu-tiny) placed in the run folder of the sshd's
user, as a run left on a host would be; an app had recorded its first events before it died.  The agent
(the real zipapp, deployed over SSH) replays the log with ``attach``; the CLI decodes, records and prints.
"""
from __future__ import annotations

import json

import pytest

from app.paths import AppPaths
from app.services.store import RunStore
from tests.conftest import DATA
from tests.e2e.conftest import add_host, remote_profile, remote_runs_dir

RECORDED = [json.loads(line) for line in (DATA / "runs" / "train-cpu-tiny.events.jsonl").read_text().splitlines()]
HELD = 2  # events the app stored before it died


def _line(event: dict) -> str:
    return json.dumps(event, separators=(",", ":"))


def _broken(event_type: str, field: str, value: str) -> tuple[int, str]:
    """(seq, line): the first event of ``event_type`` after the held ones, with ``field`` set to raw JSON."""
    event = next(e for e in RECORDED if e["type"] == event_type and e["seq"] > HELD)
    marker = '"__VALUE__"'
    return event["seq"], _line(dict(event, **{field: "__VALUE__"})).replace(marker, value)


def _cut(event_type: str) -> tuple[int, str]:
    """(seq, line): the first event of ``event_type`` after the held ones, cut short as a full disk leaves it."""
    event = next(e for e in RECORDED if e["type"] == event_type and e["seq"] > HELD)
    return event["seq"], _line(event)[:40]


# The three lines the reliability suite found ending `runs attach` in a traceback, and a line cut short
# (which made the agent's own follower on the host stop at it).
CASES = {
    "nan-dt": (_broken("step", "dt_s", "NaN"), "dt_s is nan, not a number"),
    "list-type": (_broken("log", "type", '["log"]'), "unknown event type ['log']"),
    "float-env": (_broken("probe", "env", "1.5"), "env must be an object, got 1.5"),
    "cut-line": (_cut("step"), "not a JSON event"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_runs_attach_refuses_the_bad_line_and_keeps_every_other_event(case, sshd, data_dir, run_cli, ssh_env):
    (bad_seq, bad_line), reason = CASES[case]
    run_id = f"20261124-120000-bad{len(case):03d}"
    events = [dict(e, run_id=run_id) if e["type"] == "hello" else
              dict(e, result=dict(e["result"], run_id=run_id)) if e["type"] == "result" else e for e in RECORDED]
    run_dir = remote_runs_dir(sshd) / run_id
    (run_dir / "workers").mkdir(parents=True)
    (run_dir / "events.jsonl").write_text("".join((bad_line if e["seq"] == bad_seq else _line(e)) + "\n"
                                                  for e in events))
    add_host(data_dir, remote_profile(sshd))
    paths = AppPaths.resolve(data_dir)
    with RunStore(paths.runs_db) as store:  # an app recorded the start, then died
        store.begin_run(run_id, "box", events[0].get("spec") or {"workload": "train"})
        for event in events[:HELD]:
            store.append_event(run_id, event)
        store.abandon_run(run_id)

    out = run_cli("runs", "attach", run_id, "--json", "--accept-new-host-key", env=ssh_env)

    assert out.code == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "[box] refused an event from box: " in out.stderr and reason in out.stderr
    [result] = json.loads(out.stdout)
    assert result["status"] == "ok" and result["train"]["steps_total"] == 40
    assert result["events_refused"]["count"] == 1 and reason in result["events_refused"]["reasons"][0]
    with RunStore(paths.runs_db) as store:
        stored = [e["seq"] for e in store.events(run_id)]
        assert stored == [e["seq"] for e in events if e["seq"] != bad_seq]  # every other event, once
        assert store.get_run(run_id).status == "ok"
        assert store.get_run(run_id).result["events_refused"]["count"] == 1
    shown = run_cli("runs", "show", run_id, env=ssh_env)
    assert shown.code == 0 and "refused     1 event(s) from the agent" in shown.stdout
