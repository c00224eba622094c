"""``neuronbench`` subcommands (headless): progress on stderr, machine output on stdout.

Every failure ends in one sentence on stderr and a non-zero exit status.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import app
from app.cli import (
    compare_cmd,
    ec2_cmd,
    hosts_cmd,
    monitor_cmd,
    prices_cmd,
    probe_cmd,
    report_cmd,
    run_cmd,
    runs_cmd,
)
from app.cli.arguments import Parser, undecodable_argument
from app.core.errors import NeuronBenchError
from app.core.quoting import SENTENCE_LIMIT, clean, clean_block

COMMANDS = (run_cmd, probe_cmd, monitor_cmd, hosts_cmd, ec2_cmd, runs_cmd, compare_cmd, report_cmd, prices_cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="neuronbench",
        description="Benchmark the same training or traced-inference workload on Trainium, Inferentia, "
                    "GPU and CPU hosts, and compare speed and cost.")
    parser.add_argument("--version", action="version", version=f"neuronbench {app.__version__}")
    common = Parser(add_help=False)
    common.add_argument("--data-dir", metavar="PATH",
                        help="keep runs, hosts and caches under PATH (default: per-user folders; "
                             "or set NEURONBENCH_DATA_DIR)")
    common.add_argument("--accept-new-host-key", action="store_true",
                        help="trust an SSH host seen for the first time without asking (a changed key is "
                             "always refused)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(commands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    problem = undecodable_argument(argv)
    if problem:  # before argparse echoes it, and before anything could store it
        print(f"neuronbench: error: {problem}", file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return args.handler(args)
    except NeuronBenchError as exc:
        # The sentence may quote a host or what was typed: escaped, and shortened when huge.
        print(clean(f"neuronbench: error: {exc}", SENTENCE_LIMIT), file=sys.stderr)
        if exc.detail and getattr(args, "verbose", False):
            print(clean_block(exc.detail), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("neuronbench: interrupted", file=sys.stderr)
        return 130
