"""The window's multi-node runs: one training across the ticked hosts, and re-attaching to one.

A mixin of MainWindow (it uses the window's provider, bridge, run store, runs area and
error panel): the window's own module stays about single-host runs and the views.
"""
from __future__ import annotations

from typing import Any

from app.core.cluster import declared_multinode_problem, launched_nodes_problem, node_address
from app.core.errors import BadSpecError, NeuronBenchError
from app.core.hosts import HostProfile
from app.core.quoting import clean
from app.core.slurm import SlurmSettings, slurm_spec
from app.core.specs import build_spec
from app.services.cluster_run import ClusterRun, NodeTarget
from app.services.recorder import RunRecorder
from app.services.slurm_run import SlurmRun
from app.ui.bridge import RunJob
from app.ui.widgets.live_run_view import LiveRunView
from remote_agent.protocol import RunSpec


class ClusterRunsMixin:
    """``_start_cluster`` and ``_reattach_cluster`` for MainWindow."""

    def _start_cluster(self, spec: RunSpec, hosts: list[HostProfile]) -> list[LiveRunView]:
        """One training run across ``hosts``: one live view a node, all following the run's one stream."""
        title = f"{len(hosts)} nodes"
        try:
            spec = build_spec(spec, nnodes=len(hosts))
            problem = launched_nodes_problem([(h.name, h.ec2 is not None) for h in hosts]) or \
                declared_multinode_problem(len(hosts), spec.backend, [h.instance_type for h in hosts])
            if problem:
                raise BadSpecError(problem)
            targets = [NodeTarget(self.provider.transport_for(h), node_address(h.hostname, h.local)) for h in hosts]
            cluster = ClusterRun(targets, spec)
        except (NeuronBenchError, ValueError) as exc:
            self.errors.show_exception(f"{title}: cannot start a distributed run", exc)
            return []
        recorder = self._recorder_for(hosts[0], spec, cluster.run_id, host_name=cluster.host)
        job = self.bridge.start_cluster(cluster, spec, recorder=recorder)
        views = self._show_cluster_job(job, [h.name for h in hosts])
        job.start()
        self.settings.set_workload(self.workload.form_values())
        self.settings.sync()
        self._update_actions()
        self.status_label.setText(f"One training run going across {len(hosts)} hosts")
        return views

    def _start_slurm(self, spec: RunSpec, host: HostProfile, nnodes: int) -> list[LiveRunView]:
        """One training run on ``nnodes`` nodes of a Slurm cluster: submitted on its login node, a view a node."""
        assert host.slurm is not None
        try:
            spec = slurm_spec(spec, host.name, host.instance_type, nnodes)
            slurm = SlurmRun(self.provider.transport_for(host), host.slurm, spec)
        except (NeuronBenchError, ValueError) as exc:
            self.errors.show_exception(f"{host.name}: cannot submit a Slurm run", exc)
            return []
        recorder = self._recorder_for(host, spec, slurm.run_id)
        job = self.bridge.start_cluster(slurm, spec, recorder=recorder)
        views = self._show_cluster_job(job, [host.name] * nnodes)
        job.start()
        self.settings.set_workload(self.workload.form_values())
        self.settings.sync()
        self._update_actions()
        self.status_label.setText(f"One training run submitted to Slurm on {clean(host.name)} ({nnodes} nodes)")
        return views

    def _show_cluster_job(self, job: RunJob, names: list[str]) -> list[LiveRunView]:
        job.failed.connect(self._on_job_failed)
        job.done.connect(self._on_recorded)
        return [self.runs.add_run(job, f"{'This computer' if name == 'local' else name} · node {k} of {len(names)}"
                                  + (" (reports the steps)" if k == 0 else ""), node=k)
                for k, name in enumerate(names)]

    def _reattach_cluster(self, stored: Any, held: list[dict]) -> LiveRunView | None:
        """Follow every node of a multi-node run again: the views replay what the store holds, then go on."""
        names = [node["host"] for node in held[0]["nodes"]]
        title = f"run {stored.run_id} on {len(names)} nodes"
        if any(view.job.run_id == stored.run_id for view in self.runs.active_views()):
            return None
        saved = {h.name: h for h in self.provider.hosts()}
        missing = [name for name in names if name not in saved]
        try:
            if missing:
                raise BadSpecError(f"the host(s) {', '.join(missing)} are not saved any more; add them again "
                                   f"(same names) to re-attach")
            spec = RunSpec.from_dict(held[0]["spec"])
            slurm = held[0].get("slurm")
            if slurm:  # a Slurm job: followed through its login node, waiting again if it is still queued
                cluster: ClusterRun = SlurmRun(
                    self.provider.transport_for(saved[names[0]]), SlurmSettings.from_dict(slurm.get("settings") or {}),
                    spec, run_id=stored.run_id, job_id=str(slurm["job_id"]), job_dir=str(slurm["job_dir"]))
            else:
                targets = [NodeTarget(self.provider.transport_for(saved[n]), "") for n in names]
                cluster = ClusterRun(targets, spec, run_id=stored.run_id)
            recorder, _last = RunRecorder.resume(self.store, self.book, stored.run_id,
                                                 on_error=self.store_problem.emit)
        except (NeuronBenchError, ValueError) as exc:
            self.errors.show_exception(f"cannot re-attach {title}", exc)
            return None
        if not self.runs.active_views():
            self.runs.clear()
        job = self.bridge.start_cluster(cluster, spec, recorder=recorder, held_events=held)
        views = self._show_cluster_job(job, names)
        job.start()
        self.reattach_banner.forget(stored.run_id)
        self.show_view(self.runs)
        self.status_label.setText(clean(f"Re-attached to {title}"))
        self._update_actions()
        return views[0]

