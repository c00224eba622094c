"""``neuronbench compare ID… [--baseline ID] [--json]``: speed and cost side by side (DESIGN.md §4)."""
from __future__ import annotations

import argparse
import json
import sys

from app.cli.runs_text import format_compare
from app.core.compare import CompareOptions
from app.core.errors import BadSpecError
from app.core.job_cost import JobSize, JobSizeError, parse_count
from app.core.quoting import clean_block
from app.paths import AppPaths
from app.services.pricing import load_pricebook
from app.services.reporting import Comparison, compare_stored
from app.services.store import RunStore


def add_compare_options(p: argparse.ArgumentParser) -> None:
    """Options shared by ``compare`` and ``report``."""
    p.add_argument("run_ids", nargs="+", metavar="ID", help="runs to compare (ids or unique prefixes)")
    p.add_argument("--baseline", metavar="ID", help="the run others are measured against (default: the first)")
    p.add_argument("--spot", action="store_true", help="price with spot instead of on-demand prices")
    p.add_argument("--max-p99-ms", type=float, metavar="X",
                   help="name the cheapest inference host and batch size whose p99 latency is at most X ms")
    p.add_argument("--min-throughput", type=float, metavar="Y",
                   help="name the cheapest inference host and batch size doing at least Y inferences per second")
    p.add_argument("--epochs", type=float, metavar="N", help="training budget: N epochs …")
    p.add_argument("--epoch-samples", type=int, metavar="M", help="… of M samples each (time and cost per host)")
    job = p.add_argument_group("your whole job", "hours and dollars of the job on every host, from its measured "
                               "throughput and price, compile counted once (cold and with the cache warm), "
                               "on-demand and spot")
    job.add_argument("--job-samples", metavar="N", help="a training job of N samples (3843501, 3.8M and 3.8e6 "
                     "alike)")
    job.add_argument("--job-epochs", metavar="E", help="a training job of E epochs … (with --dataset-samples)")
    job.add_argument("--dataset-samples", metavar="N", help="… over a dataset of N samples")
    job.add_argument("--job-requests", metavar="N",
                     help="an inference job of N requests (one inference each) at each batch size measured")


def register(commands, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser("compare", parents=[common], help="compare stored runs: speed, $/1M, price-performance",
                            description="One row per run and batch size; with repeats, medians and 95% intervals.")
    add_compare_options(p)
    p.add_argument("--json", action="store_true", help="print JSON on stdout")
    p.set_defaults(handler=handle)


def options_from(args: argparse.Namespace, store: RunStore) -> CompareOptions:
    if (args.epochs is None) != (args.epoch_samples is None):
        raise BadSpecError("a training budget needs both --epochs N and --epoch-samples M")
    for flag, value in (("--epochs", args.epochs), ("--epoch-samples", args.epoch_samples),
                        ("--max-p99-ms", args.max_p99_ms), ("--min-throughput", args.min_throughput)):
        if value is not None and not value > 0:
            raise BadSpecError(f"{flag} must be above 0, not {value}")
    return CompareOptions(baseline=store.resolve(args.baseline) if args.baseline else None,
                          market="spot" if args.spot else "on_demand", max_p99_ms=args.max_p99_ms,
                          min_throughput=args.min_throughput, epochs=args.epochs,
                          samples_per_epoch=args.epoch_samples, job=job_from(args))


def job_from(args: argparse.Namespace) -> JobSize | None:
    """The job the user sized with --job-samples, --job-epochs/--dataset-samples and --job-requests (None: none)."""
    if (args.job_epochs is None) != (args.dataset_samples is None):
        raise BadSpecError("a job given in epochs needs both --job-epochs E and --dataset-samples N")
    if args.job_epochs is not None and args.job_samples is not None:
        raise BadSpecError("give the training job as --job-samples N or as --job-epochs E --dataset-samples N, "
                           "not both")
    sizes = {}
    for flag, text in (("--job-samples", args.job_samples), ("--job-epochs", args.job_epochs),
                       ("--dataset-samples", args.dataset_samples), ("--job-requests", args.job_requests)):
        try:
            sizes[flag] = None if text is None else parse_count(text, "count")
        except JobSizeError:
            raise BadSpecError(f"{flag} must be a count above 0 (e.g. 1281167, 1.2M or 3e6), not {text!r}") from None
    if sizes["--job-epochs"] is not None:
        return JobSize.of_epochs(sizes["--job-epochs"], int(round(sizes["--dataset-samples"])),
                                 sizes["--job-requests"])
    if sizes["--job-samples"] is None and sizes["--job-requests"] is None:
        return None
    return JobSize(samples=sizes["--job-samples"], requests=sizes["--job-requests"])


def build(args: argparse.Namespace) -> tuple[Comparison, RunStore]:
    """The comparison for ``args`` (the store is left open for the report to read telemetry)."""
    paths = AppPaths.resolve(args.data_dir)
    store = RunStore(paths.runs_db)
    try:
        return compare_stored(store, load_pricebook(paths), args.run_ids, options_from(args, store)), store
    except BaseException:
        store.close()
        raise


def handle(args: argparse.Namespace) -> int:
    comparison, store = build(args)
    store.close()
    doc = comparison.doc
    if args.json:
        json.dump(doc, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(clean_block(format_compare(doc, doc["summary"])))  # host names and types are the hosts' text
    return 0
