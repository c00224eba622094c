"""Screenshots of the host views and dialogs (``python -m app.ui.screenshots``): the hosts panel with the host
editor and SSH questions, EC2 hosts, declaring an instance type, a Slurm cluster.

A mixin of ``app.ui.screenshots.Shots`` (split off when that module grew past 500 lines): it uses that class's
``window`` and ``save``, and the shared steps of ``app.ui.screenshot_kit`` and ``app.ui.screenshot_steps``.
"""
from __future__ import annotations

import time
from pathlib import Path

import paramiko

from app.core.ec2_launch import Ec2Launch
from app.core.hosts import HostProfile
from app.core.presets import TINY_VIT_ARGS
from app.core.slurm import SlurmSettings
from app.core.specs import build_spec
from app.services.ec2.inventory import OwnedInstance
from app.services.hosts_store import HostsStore
from app.services.pricing import load_pricebook
from app.services.recorder import run_recorded
from app.services.store import RunStore
from app.services.transport import LocalTransport
from app.ui.bridge import Bridge, RunJob
from app.ui.dialogs.launch_confirm import launch_question
from app.ui.dialogs.ssh_questions import HostKeyDialog, changed_host_key_box
from app.ui.screenshot_kit import (
    WINDOW_SIZE,
    NeverStarted,
    fill_tiny,
    save,
)
from app.ui.screenshot_steps import settle, wait_until
from app.ui.views.history_view import HistoryView
from remote_agent.protocol import RunSpec


class HostShots:
    """``shot_*`` methods for ``Shots``: the host views, numbered after the views they follow."""

    out: Path
    saved: list[Path]

    def shot_11_hosts(self) -> None:
        """Saved SSH hosts priced from the price book, the host editor, and the SSH layer's questions."""
        store = HostsStore(self.paths.config)
        for profile in (HostProfile(name="trn1-a", hostname="ec2-3-91-0-1.compute-1.amazonaws.com", user="ubuntu",
                                    identity_file="~/.ssh/trn.pem", instance_type="trn1.2xlarge", region="us-east-1"),
                        HostProfile(name="inf2-b", hostname="10.0.1.7", user="ubuntu", proxy_jump="bastion",
                                    instance_type="inf2.xlarge")):
            if store.find(profile.name) is None:
                store.add(profile)
        window = self.window(probe_hosts=False, load_models=False)
        window.sidebar.setCurrentRow(1)
        self.save(window, "11-hosts.png")
        editor = window.hosts.edit_host()
        wait_until(editor.isVisible, 10, "the host editor")
        editor.test_log.show()
        editor.test_log.setPlainText("testing ubuntu@ec2-3-91-0-1.compute-1.amazonaws.com…\n"
                                     "(an example: Test connection prints each step here)")
        save(editor, self.out, "12-host-editor.png", self.saved)
        editor.reject()
        key = paramiko.ECDSAKey.generate()  # an example key: the dialog shows the host's real one
        dialog = HostKeyDialog("trn1-a (ec2-3-91-0-1.compute-1.amazonaws.com)", key.get_name(), key.fingerprint,
                               parent=window)
        dialog.show()
        save(dialog, self.out, "13-host-key.png", self.saved)
        dialog.close()
        refusal = changed_host_key_box(
            "the host key of trn1-a ([10.0.0.5]:22) has CHANGED: ~/.ssh/known_hosts holds ssh-ed25519 "
            "SHA256:Jq3mV0bXl7m9kqH6cXzYw0V7h1Zq0y8Gm3oQ2m0Hc5s but the host now shows "
            "SHA256:4n1uYk0jO8hJ2n3bqf9qP1x6a1V9sR0Dk7fW4gLr2cM; this can be an attack, so nothing was sent; if "
            "the host was rebuilt, remove the old key with `ssh-keygen -R '[10.0.0.5]:22'` and connect again",
            window)
        refusal.show()
        save(refusal, self.out, "14-changed-host-key.png", self.saved)
        refusal.close()
        window.close()

    def shot_15_ec2(self) -> None:
        """An --ec2 host, the editor's "Launch on EC2", the launch question, launch progress, owned instances.

        Example instances and launch stages: no AWS call is made.
        """
        store = HostsStore(self.paths.config)
        profile = HostProfile(name="trn1-spot", identity_file="~/.ssh/bench.pem", instance_type="trn1.2xlarge",
                              region="us-east-1", ec2=Ec2Launch("trn1.2xlarge", "us-east-1", "bench-key", spot=True,
                                                                max_minutes=90))
        if store.find(profile.name) is None:
            store.add(profile)
        window = self.window(probe_hosts=False, load_models=False)
        now = time.time()
        window.hosts.owned.show_instances([
            OwnedInstance("i-0f3c9a7e51b2d4c68", "us-east-1", "trn1.2xlarge", "running", now - 47 * 60, "spot",
                          "20261122-050817-75f809", "trn1-spot", "", 90, held=True, usd_per_hour=0.2198,
                          usd_so_far=0.2198 * 47 / 60),
            OwnedInstance("i-07d1e2b3c4a5f6789", "us-east-1", "g5.xlarge", "running", now - 3 * 3600 - 5 * 60,
                          "on_demand", "20261121-220412-1a2b3c", "g5", "", 75, usd_per_hour=1.006,
                          usd_so_far=1.006 * 3.08)], now)
        for name in window.sidebar.rows:
            window.sidebar.set_checked(name, name == profile.name)
        window.sidebar.setCurrentRow(list(window.sidebar.rows).index(profile.name))
        fill_tiny(window, "train")
        job = RunJob(NeverStarted(profile.name), window.workload.spec(), window.bridge)
        view = window._show_job(job, profile.name)
        for stage, sentence in (
                ("launching", "launching trn1.2xlarge in us-east-1 (spot), terminated after the run or at the "
                              "latest 90 min after boot"),
                ("pending", "i-0f3c9a7e51b2d4c68 pending (image ami-0a1b2c3d4e5f67890)"),
                ("running", "i-0f3c9a7e51b2d4c68 running"),
                ("ssh up", "SSH to i-0f3c9a7e51b2d4c68 is up, host key "
                           "SHA256:u4WU3Vgb0R3cQf6hbJQ+JgW2WCPcvHrLPnXbE3dl1lo matches its console")):
            view.on_stage(stage, sentence)
        view.refresh()
        settle()
        self.save(window, "15-ec2-hosts.png")
        editor = window.hosts.edit_host()
        wait_until(editor.isVisible, 10, "the host editor")
        save(editor, self.out, "16-ec2-host-editor.png", self.saved)
        editor.reject()
        plans = window._launch_plans([profile], window.workload.spec())
        box = launch_question(window, list(plans.values()))
        box.show()
        settle()
        save(box, self.out, "17-launch-confirm.png", self.saved)
        box.close()
        window.runs.clear()
        window.close()

    def shot_18_declare_instance_type(self) -> None:
        """History's "Declare instance type…" for a real run on a host that reported none: valid, then a typo."""
        book = load_pricebook(self.paths)
        spec = RunSpec(workload="train", batch_sizes=(8,), steps=20, warmup=5, model="vit_tiny_patch16_224",
                       model_args=dict(TINY_VIT_ARGS), backend="cpu", workers=0)
        with RunStore(self.paths.runs_db) as store:
            run_id = run_recorded(LocalTransport(self.paths, host="laptop"), spec, store, book)["run_id"]
        bridge = Bridge()
        view = HistoryView(self.paths, bridge)
        view.resize(*WINDOW_SIZE)
        view.show()
        try:
            view.refresh()
            wait_until(lambda: not view.loading, 30, "the history")
            view.select_runs([run_id])
            dialog = view.declare_selected()
            if dialog is None:
                raise RuntimeError("screenshots: the run could not be declared")
            dialog.instance_type.setCurrentText("inf2.xlarge")
            dialog.region.setCurrentText("us-east-1")
            save(dialog, self.out, "18-declare-instance-type.png", self.saved)
            dialog.instance_type.setCurrentText("inf2.xlarg")
            save(dialog, self.out, "19-declare-instance-type-check.png", self.saved)
            dialog.reject()
        finally:
            view.close()
            bridge.shutdown()

    def shot_19_slurm(self) -> None:
        """A Slurm login node: the node count, a job waiting in the queue (every node's view says why), the editor.

        The queue is an example (Slurm's own "queued (Resources)" wording): no cluster is contacted.
        """
        store = HostsStore(self.paths.config)
        profile = HostProfile(name="hpc-login", hostname="login.hpc.example.org", user="ubuntu",
                              slurm=SlurmSettings(partition="trn1", time_minutes=60, exclusive=True))
        if store.find(profile.name) is None:
            store.add(profile)
        window = self.window(probe_hosts=False, load_models=False)
        for name in window.sidebar.rows:
            window.sidebar.set_checked(name, name == profile.name)
        window.sidebar.setCurrentRow(list(window.sidebar.rows).index(profile.name))
        fill_tiny(window, "train")
        window.slurm_nodes.setValue(4)
        spec = build_spec(window.workload.spec(), nnodes=4)
        job = RunJob(NeverStarted(profile.name), spec, window.bridge)
        views = window._show_cluster_job(job, [profile.name] * 4)
        now = time.time()
        for view in views:
            view.state.apply({"type": "hello", "v": 1, "seq": 1, "t": now - 95, "run_id": "20261123-111500-5a1c0e",
                              "agent_version": "0.1.0", "python": "3.11.7", "pid": 4242, "spec": spec.to_dict()})
            view.state.apply({"type": "log", "v": 1, "seq": 2, "t": now - 94, "level": "info",
                              "message": "Slurm job 81723: queued (Priority)", "slurm_state": "queued (Priority)"})
            view.state.apply({"type": "log", "v": 1, "seq": 3, "t": now - 30, "level": "info",
                              "message": "Slurm job 81723: queued (Resources)", "slurm_state": "queued (Resources)"})
            view.refresh()
        settle()
        self.save(window, "19-slurm-queued.png")
        editor = window.hosts.edit_host()
        wait_until(editor.isVisible, 10, "the host editor")
        save(editor, self.out, "20-slurm-host-editor.png", self.saved)
        editor.reject()
        window.runs.clear()
        window.close()
