"""``neuronbench ec2 list|cleanup``: the instances NeuronBench launched and still owns, and getting rid of them."""
from __future__ import annotations

import argparse
import json
import sys
import time

from app.cli.prompts import ask_yes_no, interactive
from app.core.ec2_cost import format_minutes, format_usd
from app.core.errors import BadSpecError, NeuronBenchError
from app.core.quoting import clean
from app.paths import AppPaths
from app.services.ec2.aws import AwsClients
from app.services.ec2.holds import InstanceHolds
from app.services.ec2.inventory import OwnedInstance, owned_instances, require_region, terminate_owned
from app.services.hosts_store import HostsStore
from app.services.pricing import load_pricebook


def register(commands, common: argparse.ArgumentParser) -> None:
    ec2 = commands.add_parser("ec2", help="the EC2 instances NeuronBench launched: list them, clean up leftovers",
                              description="Instances NeuronBench launched are tagged neuronbench:owner with your "
                                          "user@computer; these commands see yours.")
    sub = ec2.add_subparsers(dest="ec2_command", metavar="SUBCOMMAND")
    ec2.set_defaults(handler=lambda args: (ec2.print_help(sys.stderr), 2)[1])

    listing = sub.add_parser("list", parents=[common], help="every instance NeuronBench owns, its age and cost so far")
    listing.add_argument("--region", metavar="R", help="the region (default: those of your --ec2 hosts, else AWS's "
                                                        "configured region)")
    listing.add_argument("--json", action="store_true", help="print them as JSON on stdout")
    listing.set_defaults(handler=handle_list)

    cleanup = sub.add_parser("cleanup", parents=[common], help="terminate the instances no live run holds (asks "
                                                               "first)")
    cleanup.add_argument("--region", metavar="R", help="as for `ec2 list`")
    cleanup.add_argument("--yes", action="store_true", help="terminate without asking")
    cleanup.set_defaults(handler=handle_cleanup)


def _owned(args: argparse.Namespace) -> list[OwnedInstance]:
    paths = AppPaths.resolve(args.data_dir)
    regions = require_region(args.region, [p.ec2.region for p in HostsStore(paths.config).list() if p.ec2])
    holds = InstanceHolds(paths.data)
    try:
        book = load_pricebook(paths)
    except NeuronBenchError:
        book = None  # listed without prices rather than not at all
    found = []
    for region in regions:
        found += owned_instances(AwsClients(region), holds, book)
    return found


def format_owned(instances: list[OwnedInstance], now: float | None = None) -> str:
    now = now or time.time()
    rows = [("INSTANCE", "TYPE", "REGION", "STATE", "AGE", "COST SO FAR", "HOST", "RUN", "")]
    for o in instances:
        rows.append((o.instance_id, o.instance_type + (" spot" if o.market == "spot" else ""), o.region, o.state,
                     format_minutes(o.age_s(now)), format_usd(o.usd_so_far), o.host or "-", o.run_id or "-",
                     "in use by a run" if o.held else ""))
    rows = [tuple(clean(cell, 80) for cell in row) for row in rows]  # tags are anyone's text in the account
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def handle_list(args: argparse.Namespace) -> int:
    instances = _owned(args)
    if args.json:
        json.dump([o.to_dict() for o in instances], sys.stdout, indent=2)
        sys.stdout.write("\n")
    elif not instances:
        print("NeuronBench owns no instance there (none launched, or all terminated)", file=sys.stderr)
    else:
        print(format_owned(instances))
        total = sum(o.usd_so_far or 0.0 for o in instances)
        print(f"{len(instances)} instance(s), {format_usd(total)} so far", file=sys.stderr)
    return 0


def handle_cleanup(args: argparse.Namespace) -> int:
    instances = _owned(args)
    held = [o for o in instances if o.held]
    left = [o for o in instances if not o.held and o.state != "shutting-down"]
    for o in held:
        print(clean(f"leaving {o.instance_id} ({o.host}): a live run uses it"), file=sys.stderr)
    if not left:
        print("nothing to clean up", file=sys.stderr)
        return 0
    print(format_owned(left), file=sys.stderr)
    if not args.yes:
        if not interactive():
            raise BadSpecError(f"{len(left)} instance(s) would be terminated: pass --yes to do it without asking")
        if not ask_yes_no(f"Terminate these {len(left)} instance(s)? [y/N] "):
            raise NeuronBenchError("nothing terminated")
    for instance_id in terminate_owned(left, AppPaths.resolve(args.data_dir)):
        print(f"terminated {instance_id}", file=sys.stderr)
    return 0
