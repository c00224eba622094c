"""``neuronbench report ID… --format html|pdf|csv|json --output PATH [--baseline ID]``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.cli.compare_cmd import add_compare_options, build
from app.reports import FORMATS
from app.services.reporting import check_output, report_document, write_report


def register(commands, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser("report", parents=[common], help="write a report of stored runs (html, pdf, csv, json)",
                            description="A decision summary, results, charts, cost and methodology in one file.")
    add_compare_options(p)
    p.add_argument("--format", required=True, choices=FORMATS, help="html (one self-contained file), pdf (A4), "
                   "csv (one row per run and batch size) or json (neuronbench.report/1)")
    p.add_argument("--output", required=True, metavar="PATH", help="file to write")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    output = check_output(Path(args.output), args.format, what=f"--output {args.output}")
    comparison, store = build(args)
    try:
        doc = report_document(store, comparison)
    finally:
        store.close()
    write_report(doc, args.format, output)
    print(f"wrote {args.format.upper()} report of {len(doc['runs'])} run(s) to {output}", file=sys.stderr)
    return 0
