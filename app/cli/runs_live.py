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
from app.core.cluster import ClusterNode, cluster_label
from app.core.errors import AgentError, BadSpecError
from app.core.quoting import SENTENCE_LIMIT, clean, quoted
from app.core.run_ref import check_run_ref
from app.core.slurm import SlurmSettings
from app.paths import AppPaths
from app.services.cluster_run import ClusterRun, NodeTarget
from app.services.recorder import RunRecorder, open_recording
from app.services.session import AGENT_EXIT_NO_SUCH_RUN, RunSession
from app.services.slurm_run import SlurmRun
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
    except (StoreError, BadSpecError) as exc:  # BadSpecError: a short id, no prefix of a stored one
        if not args.host:
            if isinstance(exc, BadSpecError):
                raise
            raise BadSpecError(f"run {quoted(args.run_id)} is not in the run store; say which host it is on with "
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
        print(clean(f"[{self.host}] {text}", SENTENCE_LIMIT), file=sys.stderr)


def _cluster(store: RunStore, run_id: str) -> tuple[list[ClusterNode], dict[str, Any]] | None:
    """A stored multi-node run's nodes and its hello (None for a run on one host)."""
    hello = next(iter(store.events(run_id, types=("hello",))), None)
    if not hello or not isinstance(hello.get("nodes"), list):
        return None
    return [ClusterNode.from_dict(node) for node in hello["nodes"]], hello


def handle_attach(args: argparse.Namespace) -> int:
    args.run_id = check_run_ref(args.run_id)  # an empty or blank id never reaches a stored run
    paths = AppPaths.resolve(args.data_dir)
    store, book = open_recording(paths, warn)
    try:
        stored_cluster = _cluster(store, store.resolve(args.run_id)) if _known(store, args.run_id) else None
        if stored_cluster is not None and stored_cluster[1].get("slurm"):
            return _attach_slurm(args, paths, store, book, stored_cluster[1])
        if stored_cluster is not None:
            return _attach_cluster(args, paths, store, book, *stored_cluster)
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
    return _show_attached(args, result, host)


def _known(store: RunStore, ref: str) -> bool:
    try:
        store.resolve(ref)
    except (StoreError, BadSpecError):
        return False
    return True


def _attach_cluster(args: argparse.Namespace, paths: AppPaths, store: RunStore, book, nodes: list[ClusterNode],
                    hello: dict[str, Any]) -> int:
    """Follow every node of a multi-node run again, each from the last of its events the run store holds."""
    run_id = hello["run_id"]
    spec = RunSpec.from_dict(hello["spec"])
    recorder, next_seq = _resume_recording(store, book, run_id)
    if recorder is None:
        run = store.load(run_id)
        print(format_result(run.result) if run.result else f"run {run_id} ended {run.status} without a Result")
        return 0 if run.status == "ok" else 1
    prompts = prompts_for(args)
    transports = [transport_for(node.host, paths, prompts) for node in nodes]
    printer = ProgressPrinter(cluster_label([n.host for n in nodes]), spec)
    printer.note(f"attaching to the {len(nodes)} nodes of run {run_id} from event {next_seq}")

    def on_event(event: dict[str, Any]) -> None:
        recorder(event)
        printer(event)

    cluster = ClusterRun([NodeTarget(t, "") for t in transports], spec, run_id, on_event=on_event,
                         on_notice=printer.note)
    try:
        result = recorder.finish(cluster.attach(store.events(run_id), hello.get("rendezvous", "")))
    finally:
        for transport in transports:
            transport.close()
    return _show_attached(args, result, result.get("host"))


def _slurm_run(args: argparse.Namespace, paths: AppPaths, hello: dict[str, Any], **kwargs: Any) -> SlurmRun:
    """The Slurm run a stored hello describes, reached again through its login node."""
    slurm = hello["slurm"]
    transport = transport_for(slurm["host"], paths, prompts_for(args))
    return SlurmRun(transport, SlurmSettings.from_dict(slurm.get("settings") or {}), RunSpec.from_dict(hello["spec"]),
                    hello["run_id"], job_id=str(slurm["job_id"]), job_dir=str(slurm["job_dir"]), **kwargs)


def _attach_slurm(args: argparse.Namespace, paths: AppPaths, store: RunStore, book, hello: dict[str, Any]) -> int:
    """Follow a Slurm run again: still queued, it waits for its nodes; running, every node from where it was."""
    run_id = hello["run_id"]
    recorder, next_seq = _resume_recording(store, book, run_id)
    if recorder is None:
        run = store.load(run_id)
        print(format_result(run.result) if run.result else f"run {run_id} ended {run.status} without a Result")
        return 0 if run.status == "ok" else 1
    printer = ProgressPrinter(hello["slurm"]["host"], RunSpec.from_dict(hello["spec"]))
    printer.note(f"attaching to Slurm job {hello['slurm']['job_id']} of run {run_id} from event {next_seq}")

    def on_event(event: dict[str, Any]) -> None:
        recorder(event)
        printer(event)

    slurm = _slurm_run(args, paths, hello, on_event=on_event, on_notice=printer.note)
    try:
        result = recorder.finish(slurm.attach(store.events(run_id)))
    finally:
        slurm.login.close()
    return _show_attached(args, result, result.get("host"))


def _cancel_slurm(args: argparse.Namespace, paths: AppPaths, hello: dict[str, Any]) -> int:
    """``scancel`` the run's job: Slurm stops it on every node (or takes it out of the queue)."""
    slurm = _slurm_run(args, paths, hello)
    try:
        slurm.jobs.cancel(slurm.job_id)
    finally:
        slurm.login.close()
    print(f"{slurm.login.host}: scancel {slurm.job_id}: Slurm stops the job on every node", file=sys.stderr)
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


def _agent_cancel(transport, run_id: str) -> tuple[int, str, str]:
    """``agent cancel RUN`` over the transport (then closed): its exit status, last stderr line and stderr."""
    try:
        process = transport.start(["cancel", run_id])
        for _line in process.lines():
            pass
        code = process.wait(timeout=60)
        stderr = process.stderr_text().strip()
    finally:
        transport.close()
    return code, (stderr.splitlines()[-1] if stderr else ""), stderr


def _cancel_cluster(args: argparse.Namespace, paths: AppPaths, nodes: list[ClusterNode]) -> int:
    """Stop every node of a multi-node run; a node whose part had ended already is fine."""
    prompts = prompts_for(args)
    failures = []
    for node in nodes:
        code, last, _stderr = _agent_cancel(transport_for(node.host, paths, prompts), node.run_id)
        print(clean(f"{node.label}: {last or ('cancelled' if code == 0 else f'exit status {code}')}", SENTENCE_LIMIT),
              file=sys.stderr)
        if code not in (0, AGENT_EXIT_NO_SUCH_RUN):
            failures.append(f"{node.label}: {last}")
    if failures:
        raise AgentError("could not stop every node: " + "; ".join(failures))
    return 0


def handle_cancel(args: argparse.Namespace) -> int:
    args.run_id = check_run_ref(args.run_id)  # a script's `runs cancel "$ID"` with an empty ID cancels nothing
    paths = AppPaths.resolve(args.data_dir)
    with RunStore(paths.runs_db) as store:
        stored_cluster = _cluster(store, store.resolve(args.run_id)) if _known(store, args.run_id) else None
        if stored_cluster is None:
            run_id, host = _locate(args, store)
    if stored_cluster is not None and stored_cluster[1].get("slurm"):
        return _cancel_slurm(args, paths, stored_cluster[1])
    if stored_cluster is not None:
        return _cancel_cluster(args, paths, stored_cluster[0])
    args.host = host
    code, last, stderr = _agent_cancel(transport_for(host, paths, prompts_for(args)), run_id)
    if code != 0:
        raise AgentError(f"{args.host}: {last or f'cancel exited with code {code}'}", detail=stderr)
    print(clean(f"{args.host}: {last or 'cancelled'}", SENTENCE_LIMIT), file=sys.stderr)
    return 0


def _show_attached(args: argparse.Namespace, result: dict[str, Any], host: str | None) -> int:
    """Print the re-attached run's Result (or its JSON); exit status 1 and one sentence when it did not end ok."""
    if args.json:
        json.dump([result], sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(format_result(result))
    if result.get("status") != "ok":
        print(clean(f"neuronbench: error: run {result.get('status')} on {host}: "
                    f"{(result.get('error') or {}).get('message', 'no reason given')}", SENTENCE_LIMIT),
              file=sys.stderr)
        return 1
    return 0
