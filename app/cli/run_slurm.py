"""``neuronbench run --host SLURMHOST --nnodes N``: one training run on N nodes of a Slurm cluster.

Ctrl-C cancels the job (``scancel``) and follows it to its end, so the run is
stored ``cancelled`` with every event it sent; a second Ctrl-C stops following
and leaves the job to Slurm (``runs attach`` picks it up, ``runs cancel`` ends it).
"""
from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import Any

from app.cli.hosts_resolve import transport_for_profile
from app.cli.progress import ProgressPrinter
from app.cli.recorded_repeats import OnEvent, recorded_repeats
from app.core.hosts import HostProfile
from app.core.slurm import slurm_spec
from app.paths import AppPaths
from app.services.recorder import open_recording
from app.services.slurm_run import SlurmRun
from app.services.ssh_prompts import SshPrompts
from remote_agent.protocol import RunSpec


def follow_with_interrupt(slurm: SlurmRun, say: Callable[[str], None]) -> dict[str, Any]:
    """``slurm.run()`` on a thread; the first Ctrl-C cancels the job and keeps following it to its end."""
    outcome: dict[str, Any] = {}
    done = threading.Event()  # not Thread.is_alive(): a Ctrl-C inside join() may leave that one wrong

    def main() -> None:
        try:
            outcome["result"] = slurm.run()
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=main, name=f"slurm-run-{slurm.run_id}", daemon=True).start()
    interrupted = False
    while True:
        try:
            if done.wait(0.2):
                break
        except KeyboardInterrupt:
            if interrupted:
                raise
            interrupted = True
            say("cancelling: scancel stops the job on every node (Ctrl-C again to stop following it)")
            slurm.cancel()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def run_slurm(args: argparse.Namespace, spec: RunSpec, paths: AppPaths, prompts: SshPrompts, profile: HostProfile,
              events_file: Callable[[dict[str, Any]], None], warn: Callable[[str], None]) -> list[dict[str, Any]]:
    assert profile.slurm is not None
    spec = slurm_spec(spec, profile.name, profile.instance_type, args.nnodes)
    transport = transport_for_profile(profile, paths, prompts)
    store, book = open_recording(paths, warn)
    try:
        def run_one(run_id: str, on_event: OnEvent, printer: ProgressPrinter) -> dict[str, Any]:
            slurm = SlurmRun(transport, profile.slurm, spec, run_id, on_event=on_event, on_notice=printer.note,
                             rendezvous_timeout_s=args.rendezvous_timeout)
            return follow_with_interrupt(slurm, printer.note)

        return recorded_repeats(args, store, book, profile.name, spec, (profile.instance_type, profile.region),
                                events_file, warn, run_one)
    finally:
        store.close()
        transport.close()
