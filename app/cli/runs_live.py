"""``neuronbench runs attach ID`` and ``runs cancel ID``: runs that live on a host, detached from this process.

Until the run store knows which host a run is on, ``--host`` says it.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from app.cli.hosts_resolve import prompts_for, transport_for
from app.cli.progress import ProgressPrinter
from app.cli.text import format_result
from app.core.errors import AgentError, BadSpecError
from app.paths import AppPaths
from app.services.session import RunSession
from remote_agent.protocol import check_run_id


def add_live_commands(runs_commands, common: argparse.ArgumentParser) -> None:
    """Add ``attach`` and ``cancel`` to the ``runs`` subcommand group."""
    attach = runs_commands.add_parser("attach", parents=[common], help="follow a run from another process "
                                      "(replays its events, then streams it to the end)")
    attach.add_argument("run_id", metavar="ID")
    attach.add_argument("--host", required=True, help="the host the run is on")
    attach.add_argument("--from-seq", type=int, default=1, metavar="N", help="replay events from N on (default 1)")
    attach.add_argument("--json", action="store_true", help="print the Result JSON list on stdout")
    attach.set_defaults(handler=handle_attach)

    cancel = runs_commands.add_parser("cancel", parents=[common], help="stop a run and every process it started")
    cancel.add_argument("run_id", metavar="ID")
    cancel.add_argument("--host", required=True, help="the host the run is on")
    cancel.set_defaults(handler=handle_cancel)


def _run_id(text: str) -> str:
    try:
        return check_run_id(text)
    except ValueError as exc:
        raise BadSpecError(str(exc)) from None


class _LazyPrinter:
    """A ProgressPrinter made when the replayed hello tells what the run's spec is."""

    def __init__(self, host: str, session: RunSession) -> None:
        self.host, self.session = host, session
        self.printer: ProgressPrinter | None = None

    def __call__(self, event: dict[str, Any]) -> None:
        if self.printer is None and self.session.spec is not None:
            self.printer = ProgressPrinter(self.host, self.session.spec)
        if self.printer is not None:
            self.printer(event)

    def notice(self, text: str) -> None:
        print(f"[{self.host}] {text}", file=sys.stderr)


def handle_attach(args: argparse.Namespace) -> int:
    transport = transport_for(args.host, AppPaths.resolve(args.data_dir), prompts_for(args))
    session = RunSession(transport, None, run_id=_run_id(args.run_id))
    printer = _LazyPrinter(args.host, session)
    session.on_event, session.on_notice = printer, printer.notice
    try:
        result = session.attach(from_seq=max(1, args.from_seq))
    finally:
        transport.close()
    if args.json:
        json.dump([result], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_result(result))
    if result.get("status") != "ok":
        print(f"neuronbench: error: run {result.get('status')} on {args.host}: "
              f"{(result.get('error') or {}).get('message', 'no reason given')}", file=sys.stderr)
        return 1
    return 0


def handle_cancel(args: argparse.Namespace) -> int:
    transport = transport_for(args.host, AppPaths.resolve(args.data_dir), prompts_for(args))
    try:
        process = transport.start(["cancel", _run_id(args.run_id)])
        for _line in process.lines():
            pass
        code = process.wait(timeout=60)
        stderr = process.stderr_text().strip()
    finally:
        transport.close()
    last = stderr.splitlines()[-1] if stderr else ""
    if code != 0:
        raise AgentError(f"{args.host}: {last or f'cancel exited with code {code}'}", detail=stderr)
    print(f"{args.host}: {last or 'cancelled'}", file=sys.stderr)
    return 0
