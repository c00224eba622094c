"""``neuronbench runs list|show|set``: the runs kept in the run store.

``attach`` and ``cancel`` (runs that live on a host) come from ``app.cli.runs_live``.
"""
from __future__ import annotations

import argparse
import json
import sys

from app.cli.runs_live import add_live_commands
from app.cli.runs_text import format_cost, format_run_detail, format_run_list, headline
from app.cli.text import format_result
from app.core.runrecord import RUN_STATUSES
from app.paths import AppPaths
from app.services.pricing import load_pricebook
from app.services.run_pricing import declare_instance_type
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

    p = sub.add_parser("set", parents=[common], help="declare the instance type a stored run ran on (prices it)",
                       description="Declare the instance type (and region) a run ran on, when its host did not "
                                   "report one: the run is priced from the price book, and compare and reports "
                                   "show the type as declared after the run.")
    p.add_argument("run_id", metavar="RUN", help="run id (or a unique prefix of one)")
    p.add_argument("--instance-type", required=True, metavar="T", help="the EC2 instance type, e.g. inf2.xlarge")
    p.add_argument("--region", metavar="R", help="the AWS region, e.g. us-east-1 (default: priced as us-east-1, "
                                                 "and said so)")
    p.add_argument("--json", action="store_true", help="print the run and its new cost block as JSON on stdout")
    p.set_defaults(handler=handle_set)

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


def handle_set(args: argparse.Namespace) -> int:
    paths = AppPaths.resolve(args.data_dir)
    book = load_pricebook(paths)
    with RunStore(paths.runs_db) as store:
        run = declare_instance_type(store, book, args.run_id, args.instance_type, args.region)
    cost = (run.result or {}).get("cost")
    if args.json:
        json.dump({"run": _summary(run), "cost": cost}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    declared = run.declared or {}
    print(f"run {run.run_id}: {declared['instance_type']} ({declared.get('region') or 'region not given'}), "
          f"declared after the run")
    if run.result:
        print("\n".join(format_cost(cost)))
    else:
        print("  cost        priced when its result arrives (the run has none yet: re-attach it)")
    return 0
