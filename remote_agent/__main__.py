"""``python agent.pyz probe|run|attach|cancel|monitor`` (and the internal ``_supervise``/``_worker``)."""
from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any, List, Optional

from remote_agent.protocol import TELEMETRY_PERIOD_S


def _parser() -> Any:
    import argparse

    parser = argparse.ArgumentParser(prog="neuronbench-agent", description="NeuronBench host agent (protocol v1)")
    commands = parser.add_subparsers(dest="command", required=True)
    probe = commands.add_parser("probe", help="describe this host as one probe event")
    probe.add_argument("--quick", action="store_true", help="skip the EC2 metadata lookup")
    run = commands.add_parser("run", help="start a detached run (RunSpec JSON on stdin) and stream it")
    run.add_argument("--run-id", default=None)
    attach = commands.add_parser("attach", help="stream a run's events from a seq on")
    attach.add_argument("run_id")
    attach.add_argument("--from-seq", type=int, default=1)
    cancel = commands.add_parser("cancel", help="stop a run and every process it started")
    cancel.add_argument("run_id")
    stage = commands.add_parser("stage", help="prepare a Slurm job's folder (request JSON on stdin)")
    stage.add_argument("--run-id", required=True)
    master = commands.add_parser("master", help="this host's address and two free ports, as a multi-node run's "
                                 "master (JSON on stdout)")
    master.add_argument("--peer", default=None, help="another node: the address is the one on the route to it")
    monitor = commands.add_parser("monitor", help="stream the host's telemetry (sample events) until stopped")
    monitor.add_argument("--period", type=float, default=TELEMETRY_PERIOD_S, help="seconds between samples")
    monitor.add_argument("--duration", type=float, default=None, help="stop after this many seconds")
    return parser


def _fast_parse(argv: List[str]) -> Optional[SimpleNamespace]:
    """The app's exact command lines, without argparse (~10 ms a start); anything else goes to argparse.

    ``run`` and ``attach`` start on every run and reconnect, on the path to the first event.
    """
    if len(argv) == 3 and argv[0] == "run" and argv[1] == "--run-id":
        return SimpleNamespace(command="run", run_id=argv[2])
    if len(argv) == 4 and argv[0] == "attach" and argv[2] == "--from-seq" and argv[3].isdigit():
        return SimpleNamespace(command="attach", run_id=argv[1], from_seq=int(argv[3]))
    if len(argv) == 2 and argv[0] == "cancel" and not argv[1].startswith("-"):
        return SimpleNamespace(command="cancel", run_id=argv[1])
    return None


def _use_private_site() -> None:
    """Make packages the app installed for the agent (e.g. timm) importable, after the Python's own.

    Appended, not prepended: a package the host's Python has always wins.
    Every agent process (supervisor, workers, torchrun's workers) runs this.
    """
    from remote_agent.rundir import private_site

    site = private_site()
    if os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _use_private_site()
    # Internal entry points take positional arguments only and skip argparse's import cost.
    if argv and argv[0] == "_supervise":
        from remote_agent.supervisor import main as supervise

        return supervise(argv[1])
    if argv and argv[0] == "_exec":
        from remote_agent.orphan import exec_guarded

        return exec_guarded(argv[1:])
    if argv and argv[0] == "_slurm_node":
        from remote_agent.slurm_node import node_main

        return node_main(argv[1])
    if argv and argv[0] == "_worker":
        from remote_agent.worker import parse_args

        return parse_args(argv[1:])
    args = _fast_parse(argv) or _parser().parse_args(argv)
    from remote_agent import runner

    out = sys.stdout.buffer
    try:
        if args.command == "probe":
            return runner.probe(out, quick=args.quick)
        if args.command == "run":
            return runner.run(sys.stdin.read(), args.run_id, out)
        if args.command == "attach":
            return runner.attach(args.run_id, args.from_seq, out)
        if args.command == "stage":
            return runner.stage(sys.stdin.read(), args.run_id, out)
        if args.command == "master":
            return runner.master(out, args.peer)
        if args.command == "monitor":
            return runner.monitor(out, args.period, args.duration)
        return runner.cancel(args.run_id)
    except BrokenPipeError:
        # The app went away (a dropped connection): the run itself goes on.
        return 0


if __name__ == "__main__":
    sys.exit(main())
