"""``neuronbench runs ...``: runs kept on hosts and (with the run store) on this computer."""
from __future__ import annotations

import argparse
import sys

from app.cli.runs_live import add_live_commands


def register(commands, common: argparse.ArgumentParser) -> None:
    runs = commands.add_parser("runs", help="attach to or cancel runs on hosts")
    sub = runs.add_subparsers(dest="runs_command", metavar="SUBCOMMAND")
    add_live_commands(sub, common)

    def usage(_args: argparse.Namespace) -> int:
        runs.print_help(sys.stderr)
        return 2

    runs.set_defaults(handler=usage)
