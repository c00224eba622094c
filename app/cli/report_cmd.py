"""``neuronbench report ID… --format html|pdf|csv|json --output PATH [--baseline ID]``."""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path

import app
from app.cli.compare_cmd import add_compare_options, build
from app.core.compile_cache import cache_state_of_events
from app.core.errors import BadSpecError
from app.reports import FORMATS
from app.reports.model import RunMaterial, build_report


def register(commands, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser("report", parents=[common], help="write a report of stored runs (html, pdf, csv, json)",
                            description="A decision summary, results, charts, cost and methodology in one file.")
    add_compare_options(p)
    p.add_argument("--format", required=True, choices=FORMATS, help="html (one self-contained file), pdf (A4), "
                   "csv (one row per run and batch size) or json (neuronbench.report/1)")
    p.add_argument("--output", required=True, metavar="PATH", help="file to write")
    p.set_defaults(handler=handle)


def _render(doc: dict, fmt: str, path: Path) -> None:
    if fmt == "pdf":
        from app.reports.pdf import write_pdf  # Qt is loaded only for PDFs

        write_pdf(doc, path)
        return
    if fmt == "html":
        from app.reports.html import render_html as render
    elif fmt == "csv":
        from app.reports.csv_report import render_csv as render
    else:
        from app.reports.json_report import render_json as render
    path.write_text(render(doc), encoding="utf-8")


def handle(args: argparse.Namespace) -> int:
    output = Path(args.output).expanduser()
    if output.is_dir():
        raise BadSpecError(f"--output {args.output} is a folder: name the file to write (e.g. report.{args.format})")
    if not output.parent.is_dir():
        raise BadSpecError(f"--output {args.output}: the folder {output.parent} does not exist")
    compare_doc, runs, store = build(args)
    try:
        materials = [RunMaterial(run, store.telemetry(run.run_id),
                                 cache_state_of_events(store.events(run.run_id, types=("log",)))) for run in runs]
    finally:
        store.close()
    doc = build_report(materials, compare_doc, f"neuronbench {app.__version__}", time.time(), compare_doc["summary"])
    # Write next to the target and rename: a failed render never leaves half a report behind.
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".part")
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would hide the report from whoever it is for
    try:
        _render(doc, args.format, Path(tmp))
        os.replace(tmp, output)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    print(f"wrote {args.format.upper()} report of {len(doc['runs'])} run(s) to {output}", file=sys.stderr)
    return 0
