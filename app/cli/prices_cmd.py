"""``neuronbench prices list|set|unset|refresh``: the price book, where each price comes from, and its date."""
from __future__ import annotations

import argparse
import json
import sys

from app.core.errors import BadSpecError
from app.core.pricebook import MARKETS, PriceBookError, market_label, parse_usd_per_hour
from app.paths import AppPaths
from app.services import pricing


def register(commands, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser("prices", parents=[common], help="hourly prices used for cost figures",
                                 description="The price book: shipped snapshot, prices you set, prices "
                                             "fetched from AWS. Each price shows its source and date.")
    sub = parser.add_subparsers(dest="prices_command", metavar="ACTION", required=True)

    p = sub.add_parser("list", parents=[common], help="show prices (on-demand and spot) with source and date")
    p.add_argument("--region", metavar="R", help="only this region (e.g. us-east-1)")
    p.add_argument("--type", dest="types", action="append", metavar="TYPE", help="only this instance type")
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.set_defaults(handler=handle_list)

    p = sub.add_parser("set", parents=[common], help="use your own price for an instance type (wins over others)")
    p.add_argument("instance_type", metavar="TYPE")
    p.add_argument("usd_per_hour", metavar="USD_PER_HOUR")
    p.add_argument("--region", metavar="R", help="only in this region (default: every region)")
    p.add_argument("--spot", action="store_true", help="set the spot price instead of the on-demand one")
    p.add_argument("--note", metavar="TEXT", help="what this price is (e.g. \"1-year RI\"): shown as its source")
    p.add_argument("--json", action="store_true", help="print the stored price as JSON")
    p.set_defaults(handler=handle_set)

    p = sub.add_parser("unset", parents=[common], help="forget prices you set for an instance type")
    p.add_argument("instance_type", metavar="TYPE")
    p.add_argument("--region", metavar="R", help="only the price set for this region")
    p.add_argument("--spot", action="store_true", help="only the spot price")
    p.set_defaults(handler=handle_unset)

    p = sub.add_parser("refresh", parents=[common],
                       help="fetch current on-demand and spot prices from AWS (needs boto3 and AWS credentials)")
    p.add_argument("--region", dest="regions", action="append", metavar="R",
                   help="region to price (repeat for several; default: every region in the price book)")
    p.add_argument("--type", dest="types", action="append", metavar="TYPE",
                   help="instance type to price (repeat; default: every type in the price book)")
    p.add_argument("--json", action="store_true", help="print the fetched prices as JSON")
    p.set_defaults(handler=handle_refresh)


def _usd(value: float | None) -> str:
    return "N/A" if value is None else f"{value:.6g}"


def handle_list(args: argparse.Namespace) -> int:
    book = pricing.load_pricebook(AppPaths.resolve(args.data_dir))
    rows = book.rows(region=args.region)
    if args.types:
        rows = [r for r in rows if r["instance_type"] in args.types]
    if args.json:
        json.dump({"prices": rows}, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    if not rows:
        print(f"no prices for {args.region or 'any region'}", file=sys.stderr)
        return 1
    sources: list[str] = []

    def cell(price: dict) -> str:
        if price["usd_per_hour"] is None:
            return "N/A (no public price)" if price["source"] else "N/A"
        label = f"{price['source']} ({price['date']})"
        if label not in sources:
            sources.append(label)
        return f"{_usd(price['usd_per_hour'])} [{sources.index(label) + 1}]"

    table = [("TYPE", "REGION", "ON-DEMAND $/h", "SPOT $/h", "CORES", "ACCELERATOR")]
    for row in rows:
        spec = row["spec"] or {}
        accel = f"{spec.get('accelerator_count')}x {spec['accelerator_name']}" if spec.get("accelerator_name") else ""
        table.append((row["instance_type"], row["region"], cell(row["on_demand"]), cell(row["spot"]),
                      str(spec.get("neuron_cores") or ""), accel))
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for r in table:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    print()
    for i, label in enumerate(sources, 1):
        print(f"[{i}] {label}")
    print("Spot prices change often and differ by zone: `neuronbench prices refresh` fetches current ones.")
    return 0


def handle_set(args: argparse.Namespace) -> int:
    try:
        usd = parse_usd_per_hour(args.usd_per_hour)
        entry = pricing.set_user_price(AppPaths.resolve(args.data_dir), args.instance_type, usd,
                                       region=args.region, market="spot" if args.spot else "on_demand",
                                       note=args.note)
    except PriceBookError as exc:
        raise BadSpecError(str(exc)) from None
    if args.json:
        json.dump(entry.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        where = f"in {args.region}" if args.region else "in every region"
        print(f"{entry.instance_type} {market_label(entry.market)} {where}: ${usd}/h ({entry.source} on {entry.date}); "
              "compare and report use it from now on")
    return 0


def handle_unset(args: argparse.Namespace) -> int:
    removed = pricing.unset_user_price(AppPaths.resolve(args.data_dir), args.instance_type, region=args.region,
                                       market="spot" if args.spot else None)
    if not removed:
        raise BadSpecError(f"you have set no price for {args.instance_type}"
                           + (f" in {args.region}" if args.region else ""))
    print(f"removed {removed} price(s) you set for {args.instance_type}")
    return 0


def handle_refresh(args: argparse.Namespace) -> int:
    from app.services import pricing_refresh  # boto3 stays out of every other command

    paths = AppPaths.resolve(args.data_dir)
    book = pricing.load_pricebook(paths)
    types = args.types or book.instance_types()
    regions = args.regions or sorted({r for t in types for r in book.regions_of(t)}) or ["us-east-1"]
    outcome = pricing_refresh.refresh(types, regions, progress=lambda m: print(m, file=sys.stderr))
    pricing.save_refreshed(paths, outcome.entries)
    for problem in outcome.problems:
        print(f"neuronbench: warning: {problem}", file=sys.stderr)
    if args.json:
        json.dump({"prices": [e.to_dict() for e in outcome.entries], "problems": outcome.problems},
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        priced = {m: sum(1 for e in outcome.entries if e.market == m and e.usd_per_hour is not None) for m in MARKETS}
        unpriced = [f"{e.instance_type} {market_label(e.market)} in {e.region}" for e in outcome.entries
                    if e.usd_per_hour is None]
        print(f"fetched {priced['on_demand']} on-demand and {priced['spot']} spot prices for {len(types)} type(s) "
              f"in {', '.join(regions)}; kept in {paths.prices_file}")
        if unpriced:
            print("no public price: " + ", ".join(unpriced))
    return 0 if outcome.entries or not outcome.problems else 1
