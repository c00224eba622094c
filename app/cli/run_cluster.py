"""``neuronbench run --nodes H1,H2,...``: one training run across several SSH hosts (torchrun on every node)."""
from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from app.cli.hosts_resolve import transport_for_profile
from app.cli.interrupt import follow_interruptibly
from app.cli.progress import ProgressPrinter
from app.cli.recorded_repeats import OnEvent, recorded_repeats
from app.core.cluster import cluster_label, declared_multinode_problem, launched_nodes_problem, node_address
from app.core.errors import BadSpecError
from app.core.specs import build_spec
from app.paths import AppPaths
from app.services.cluster_run import ClusterRun, NodeTarget
from app.services.hosts_store import HostsStore
from app.services.recorder import open_recording
from app.services.run_group import RunGroup
from app.services.ssh_prompts import SshPrompts
from remote_agent.protocol import RunSpec


def parse_nodes(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if len(names) < 2:
        raise BadSpecError(f"--nodes {text!r}: name two hosts or more, comma-separated (one run spans them all)")
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise BadSpecError(f"--nodes names {', '.join(twice)} twice: each host is one node")
    return names


def run_cluster(args: argparse.Namespace, spec: RunSpec, paths: AppPaths, prompts: SshPrompts, hosts: HostsStore,
                events_file: Callable[[dict[str, Any]], None], warn: Callable[[str], None],
                group: RunGroup) -> list[dict[str, Any]] | None:
    names = parse_nodes(args.nodes)
    if args.nnodes is not None and args.nnodes != len(names):
        raise BadSpecError(f"--nnodes {args.nnodes} but --nodes names {len(names)} hosts: one node per host")
    if spec.workload != "train":
        raise BadSpecError("--nodes runs one training across the hosts; inference runs on one host "
                           "(use --host for each)")
    spec = build_spec(spec, nnodes=len(names))
    profiles = [hosts.get(name) for name in names]
    problem = launched_nodes_problem([(p.name, p.ec2 is not None) for p in profiles]) or \
        declared_multinode_problem(len(names), spec.backend, [p.instance_type for p in profiles])
    if problem:
        raise BadSpecError(problem)
    transports = [transport_for_profile(p, paths, prompts, hosts) for p in profiles]
    targets = [NodeTarget(t, node_address(p.hostname, p.local)) for t, p in zip(transports, profiles, strict=True)]
    store, book = open_recording(paths, warn)
    try:
        def make_run(run_id: str, on_event: OnEvent, printer: ProgressPrinter) -> ClusterRun:
            return ClusterRun(targets, spec, run_id, on_event=on_event, on_notice=printer.note,
                              master_addr=args.master_addr, rendezvous_timeout_s=args.rendezvous_timeout)

        return follow_interruptibly(
            lambda: recorded_repeats(args, store, book, cluster_label(names), spec,
                                     (profiles[0].instance_type, profiles[0].region), events_file, warn, make_run,
                                     group),
            group, "cancelling: stopping the run on every node, then waiting until no process of it is left "
                         "(Ctrl-C again to stop waiting and leave it running)")
    finally:
        store.close()
        for transport in transports:
            transport.release()
            transport.close()
