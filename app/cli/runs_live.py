"""``neuronbench runs attach ID`` and ``runs cancel ID``: runs that live on a host, detached from this process.

The run store knows which host a run is on and which events it already holds:
``attach`` resumes from the last stored event and records the rest, so a run
whose app was closed or killed ends up complete in the history.  ``--host``
is needed only for a run this computer never recorded.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from app.cli.hosts_resolve import prompts_for, transport_for
from app.cli.progress import ProgressPrinter
from app.cli.run_cmd import warn
from app.cli.text import format_result
from app.core.errors import AgentError, BadSpecError
from app.paths import AppPaths
from app.services.recorder import RunRecorder, open_recording
from app.services.session import RunSession
from app.services.store import RunStore, StoreError
from remote_agent.protocol import RunSpec, check_run_id


def add_live_commands(runs_commands, common: argparse.ArgumentParser) -> None:
    """Add ``attach`` and ``cancel`` to the ``runs`` subcommand group."""
    attach = runs_commands.add_parser("attach", parents=[common], help="follow a run from another process "
                                      "(replays its events, then streams it to the end)")
    attach.add_argument("run_id", metavar="ID", help="run id (or a unique prefix of a stored one)")
    attach.add_argument("--host", help="the host the run is on (default: the one the run store names)")
    attach.add_argument("--from-seq", type=int, default=None, metavar="N",
                        help="replay events from N on (default: after the last event the run store holds, else 1)")
    attach.add_argument("--json", action="store_true", help="print the Result JSON list on stdout")
    attach.set_defaults(handler=handle_attach)

    cancel = runs_commands.add_parser("cancel", parents=[common], help="stop a run and every process it started")
    cancel.add_argument("run_id", metavar="ID", help="run id (or a unique prefix of a stored one)")
    cancel.add_argument("--host", help="the host the run is on (default: the one the run store names)")
    cancel.set_defaults(handler=handle_cancel)


def _run_id(text: str) -> str:
    try:
        return check_run_id(text)
    except ValueError as exc:
        raise BadSpecError(str(exc)) from None


def _locate(args: argparse.Namespace, store: RunStore) -> tuple[str, str]:
    """(run id, host): from the run store, or as given when the store does not know the run."""
    try:
        run = store.load(args.run_id)
    except StoreError:
        if not args.host:
            raise BadSpecError(f"run {args.run_id!r} is not in the run store; say which host it is on with "
                               "--host") from None
        return _run_id(args.run_id), args.host
    if args.host and args.host != run.host:
        raise BadSpecError(f"run {run.run_id} ran on {run.host}, not on {args.host}")
    return run.run_id, run.host


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
    paths = AppPaths.resolve(args.data_dir)
    store, book = open_recording(paths, warn)
    try:
        run_id, host = _locate(args, store)
        recorder, from_seq = _resume_recording(store, book, run_id)
        if args.from_seq is not None:
            from_seq = args.from_seq
        transport = transport_for(host, paths, prompts_for(args))
        stored = store.get_run(run_id)
        spec = RunSpec.from_dict(stored.spec) if stored and stored.spec else None
        session = RunSession(transport, spec, run_id=run_id)
        printer = _LazyPrinter(host, session)
        printer.notice(f"attaching to run {run_id} from event {max(1, from_seq)}"
                       + (f" ({from_seq - 1} already in the run store)" if from_seq > 1 else ""))

        def on_event(event: dict[str, Any]) -> None:
            if recorder is not None:
                recorder(event)
            printer(event)

        session.on_event, session.on_notice = on_event, printer.notice
        try:
            result = session.attach(from_seq=max(1, from_seq))
        finally:
            transport.close()
        if recorder is not None:
            result = recorder.finish(result)
    finally:
        store.close()
    if args.json:
        json.dump([result], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_result(result))
    if result.get("status") != "ok":
        print(f"neuronbench: error: run {result.get('status')} on {host}: "
              f"{(result.get('error') or {}).get('message', 'no reason given')}", file=sys.stderr)
        return 1
    return 0


def _resume_recording(store: RunStore, book, run_id: str) -> tuple[RunRecorder | None, int]:
    """Record the rest of an unfinished stored run; a finished or unknown one is only replayed."""
    run = store.get_run(run_id)
    if run is None or run.finished:
        return None, 1
    try:
        recorder, last = RunRecorder.resume(store, book, run_id, on_error=warn)
    except StoreError as exc:
        warn(f"{exc}; following it without recording")
        return None, 1
    return recorder, last + 1


def handle_cancel(args: argparse.Namespace) -> int:
    paths = AppPaths.resolve(args.data_dir)
    with RunStore(paths.runs_db) as store:
        run_id, host = _locate(args, store)
    args.host = host
    transport = transport_for(host, paths, prompts_for(args))
    try:
        process = transport.start(["cancel", run_id])
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
