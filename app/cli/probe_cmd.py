"""``neuronbench probe --host HOST [--json]``: what a host has (Python, torch, devices, instance type)."""
from __future__ import annotations

import argparse
import json
import sys

from app.cli.hosts_resolve import prompts_for, transport_for
from app.cli.text import format_env
from app.paths import AppPaths
from app.services.session import probe_host


def register(commands, common: argparse.ArgumentParser) -> None:
    parser = commands.add_parser("probe", parents=[common], help="describe a host: Python, torch, devices, "
                                 "instance type, pre-flight warnings")
    parser.add_argument("--host", required=True, help="host name (`local` is this computer)")
    parser.add_argument("--json", action="store_true", help="print the probe as JSON on stdout")
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    paths = AppPaths.resolve(args.data_dir)
    transport = transport_for(args.host, paths, prompts_for(args))
    try:
        env = probe_host(transport)
    finally:
        transport.close()
    if args.json:
        json.dump({"host": args.host, "env": env}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_env(args.host, env))
    return 0
