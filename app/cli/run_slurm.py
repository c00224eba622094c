"""``neuronbench run --host SLURMHOST --nnodes N``: one training run on N nodes of a Slurm cluster.

Ctrl-C cancels the job (``scancel``) and follows it to its end, so the run is
stored ``cancelled`` with every event it sent; a second Ctrl-C stops following
and leaves the job to Slurm (``runs attach`` picks it up, ``runs cancel`` ends it):
app.cli.interrupt, as for every run.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from app.cli.hosts_resolve import transport_for_profile
from app.cli.interrupt import follow_interruptibly
from app.cli.progress import ProgressPrinter
from app.cli.recorded_repeats import OnEvent, recorded_repeats
from app.core.hosts import HostProfile
from app.core.slurm import slurm_spec
from app.paths import AppPaths
from app.services.recorder import open_recording
from app.services.run_group import RunGroup
from app.services.slurm_run import SlurmRun
from app.services.ssh_prompts import SshPrompts
from remote_agent.protocol import RunSpec


def run_slurm(args: argparse.Namespace, spec: RunSpec, paths: AppPaths, prompts: SshPrompts, profile: HostProfile,
              events_file: Callable[[dict[str, Any]], None], warn: Callable[[str], None],
              group: RunGroup) -> list[dict[str, Any]] | None:
    assert profile.slurm is not None
    spec = slurm_spec(spec, profile.name, profile.instance_type, args.nnodes)
    transport = transport_for_profile(profile, paths, prompts)
    store, book = open_recording(paths, warn)
    try:
        def make_run(run_id: str, on_event: OnEvent, printer: ProgressPrinter) -> SlurmRun:
            return SlurmRun(transport, profile.slurm, spec, run_id, on_event=on_event, on_notice=printer.note,
                            rendezvous_timeout_s=args.rendezvous_timeout)

        return follow_interruptibly(
            lambda: recorded_repeats(args, store, book, profile.name, spec, (profile.instance_type, profile.region),
                                     events_file, warn, make_run, group),
            group, "cancelling: scancel stops the job on every node (Ctrl-C again to stop following it)")
    finally:
        store.close()
        transport.close()
