"""``neuronbench runs list|show``: the runs kept in the run store.

``attach`` and ``cancel`` (runs that live on a host) come from ``app.cli.runs_live``.
"""
from __future__ import annotations

import argparse
import json
import sys

from app.cli.runs_live import add_live_commands
from app.cli.runs_text import format_run_detail, format_run_list, headline
from app.cli.text import format_result
from app.core.runrecord import RUN_STATUSES
from app.paths import AppPaths
from app.services.store import RunStore


def open_store(args: argparse.Namespace) -> RunStore:
    return RunStore(AppPaths.resolve(args.data_dir).runs_db)


def register(commands, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser("runs", parents=[common], help="runs kept in the run store",
                                 description="Every run is kept: spec, environment, events, telemetry, Result.")
    sub = parser.add_subparsers(dest="runs_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", parents=[common], help="list runs, newest first")
    p.add_argument("--host", help="only runs on this host")
    p.add_argument("--status", choices=RUN_STATUSES, help="only runs in this state")
    p.add_argument("--limit", type=int, default=50, metavar="N", help="at most N runs (default 50; 0 for all)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.set_defaults(handler=handle_list)

    p = sub.add_parser("show", parents=[common], help="one run: environment, Result, cost")
    p.add_argument("run_id", metavar="ID", help="run id (or a unique prefix of one)")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.add_argument("--events", action="store_true", help="print the run's raw events (JSON Lines) instead")
    p.set_defaults(handler=handle_show)

    add_live_commands(sub, common)


def _summary(run) -> dict:
    data = run.to_dict()
    data.pop("result")
    return data


def handle_list(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        runs = store.list_runs(limit=args.limit or None, host=args.host, status=args.status)
    if args.json:
        json.dump({"runs": [_summary(r) | {"headline": headline(r)} for r in runs]}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif runs:
        print(format_run_list(runs))
    else:
        print("no runs yet: `neuronbench run --host local --preset quickstart` makes one", file=sys.stderr)
    return 0


def handle_show(args: argparse.Namespace) -> int:
    with open_store(args) as store:
        run = store.load(args.run_id)
        if args.events:
            for event in store.events(run.run_id):
                sys.stdout.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")
            return 0
        telemetry = store.telemetry(run.run_id)
    if args.json:
        json.dump({"run": _summary(run), "result": run.result, "telemetry": telemetry}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        result_text = format_result(run.result) if run.result else None
        print(format_run_detail(run, len(telemetry), result_text))
    return 0
