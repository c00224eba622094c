"""The ``--repeats`` loop of the multi-node commands: each repeat a new run, recorded, printed and written out."""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from app.cli.progress import ProgressPrinter
from app.core.errors import NeuronBenchError
from app.core.pricebook import PriceBook
from app.core.results import failed_result
from app.services.recorder import RunRecorder
from app.services.run_group import Followable, RunGroup
from app.services.session import Detached
from app.services.store import RunStore
from remote_agent.protocol import RunSpec, new_run_id

OnEvent = Callable[[dict[str, Any]], None]


def recorded_repeats(args: argparse.Namespace, store: RunStore, book: PriceBook, host: str, spec: RunSpec,
                     declared: tuple[str | None, str | None], events_file: OnEvent, warn: Callable[[str], None],
                     make_run: Callable[[str, OnEvent, ProgressPrinter], Followable],
                     group: RunGroup) -> list[dict[str, Any]]:
    """``make_run(run_id, on_event, printer)`` once per repeat, followed through ``group`` (Ctrl-C stops the
    repeats); every event is stored before anything else sees it."""
    results = []
    for repeat in range(1, args.repeats + 1):
        if group.stopped:
            break  # Ctrl-C: no further repeat starts
        run_id = new_run_id()
        label = f" #{repeat}/{args.repeats}" if args.repeats > 1 else ""
        printer = ProgressPrinter(host, spec, label, stream=sys.stderr)
        recorder = RunRecorder.start(store, book, host, spec, run_id, on_error=warn, declared_type=declared[0],
                                     declared_region=declared[1])

        def on_event(event: dict[str, Any], recorder: RunRecorder = recorder,
                     printer: ProgressPrinter = printer) -> None:
            recorder(event)  # stored before anything else sees it
            events_file(event)
            printer(event)

        run = make_run(run_id, on_event, printer)
        with group.holding(run):  # a Ctrl-C waits until the Result is stored, not only until the run ended
            try:
                result = recorder.finish(group.follow(run))
            except Detached as exc:
                if run.launched:
                    recorder.abandon()  # it goes on on its nodes: `runs attach` picks it up
                    break
                result = failed_result(host, spec.to_dict(), run_id, exc)
                result = recorder.finish(dict(result, status="cancelled"))
            except NeuronBenchError as exc:
                result = recorder.fail(exc)
        if args.repeats > 1:
            result["repeat"] = {"index": repeat, "of": args.repeats}
        results.append(result)
    return results
