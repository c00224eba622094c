"""``python -m app.ui.screenshots OUTDIR``: every main view rendered to PNG, offscreen, for review and docs/images/

The live views of training and inference are fed by *real* tiny runs on this
computer (the test ViT on the cpu backend, seconds each), started from the Run
button, with the CPU and memory telemetry their monitor streams.  This computer
has no NeuronCore, so the NeuronCore telemetry view replays a recorded run with
neuron-monitor samples from ``tests/data/runs`` (its title says so).  History and
comparison show real tiny runs recorded in the scratch store, and the "Declare
instance type" dialog a real run whose host reported none; the host views show
example hosts and dialogs (no connection is made).  Nothing touches the user's
settings or data: both live in a temporary folder unless ``--data-dir`` says.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import paramiko
from PySide6.QtCore import QSettings
from PySide6.QtGui import QColor, QPalette
from PySide6.QtWidgets import QStyleFactory, QWidget

from app.core.ec2_launch import Ec2Launch
from app.core.hosts import HostProfile
from app.core.presets import TINY_VIT_ARGS
from app.core.slurm import SlurmSettings
from app.core.specs import build_spec
from app.paths import AppPaths
from app.services.cluster_run import ClusterRun, NodeTarget
from app.services.ec2.inventory import OwnedInstance
from app.services.hosts_store import HostsStore
from app.services.pricing import load_pricebook
from app.services.recorder import RunRecorder, run_recorded
from app.services.replay import ReplayTransport, live_stream, read_events, virtual_clock
from app.services.store import RunStore
from app.services.synthetic_telemetry import cpu_host_samples
from app.services.transport import LocalTransport, Transport
from app.ui.app import make_application
from app.ui.bridge import Bridge, RunJob
from app.ui.dialogs.launch_confirm import launch_question
from app.ui.dialogs.ssh_questions import HostKeyDialog, changed_host_key_box
from app.ui.main_window import MainWindow
from app.ui.screenshot_models import ModelShots
from app.ui.screenshot_steps import run_from_button, settle, wait_until
from app.ui.settings import AppSettings
from app.ui.views.compare_view import CompareView
from app.ui.views.history_view import HistoryView
from remote_agent.protocol import RunSpec, new_run_id

RUNS_DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "runs"
WINDOW_SIZE = (1440, 900)
TINY_MODEL_ARGS = " ".join(f"{k}={v}" for k, v in TINY_VIT_ARGS.items())


class _NeverStarted(Transport):
    """The transport of a run shown while its instance launches: the screenshot never starts it."""

    def __init__(self, host: str) -> None:
        self.host = host

    def describe(self) -> str:
        return "i-0f3c9a7e51b2d4c68 (trn1.2xlarge in us-east-1)"


def save(widget: QWidget, out: Path, name: str, saved: list[Path]) -> None:
    settle()
    path = out / name
    if not widget.grab().save(str(path)):
        raise OSError(f"could not write {path}")
    saved.append(path)
    print(f"wrote {path}", file=sys.stderr)


def new_window(paths: AppPaths, settings_file: Path, **kwargs) -> MainWindow:
    if settings_file.exists():
        settings_file.unlink()  # every view starts from a new user's window
    window = MainWindow(paths, AppSettings(QSettings(str(settings_file), QSettings.Format.IniFormat)), **kwargs)
    window.resize(*WINDOW_SIZE)
    window.show()
    return window


def fill_tiny(window: MainWindow, workload: str, **values) -> None:
    form = {"preset": "", "workload": workload, "model": "vit_tiny_patch16_224", "model_args": TINY_MODEL_ARGS,
            "backend": "cpu", "precision": "fp32", "workers": 0, "warmup": 3}
    form.update(values)
    window.workload.set_form_values(form)


def replay_job(window: MainWindow, events_file: str, title: str, samples: list[dict], loops: int = 1,
               pace_s: float = 0.0, recorded_times: bool = False, priced_as: HostProfile | None = None):
    """A view replaying a recorded run; ``recorded_times`` keeps each event's own time (a real run's timeline).

    ``priced_as``: record the replay in the store as a run on that host, priced by its declared instance type.
    """
    events = read_events(RUNS_DATA / events_file)
    spec = RunSpec.from_dict(next(e for e in events if e["type"] == "result")["result"]["spec"])
    transport = ReplayTransport(lambda: live_stream(events, samples, every=10, loops=loops), title,
                                pace=lambda e: 0.0 if e.get("type") == "sample" else pace_s,
                                clock=(lambda: lambda e: e["t"]) if recorded_times else lambda: virtual_clock(10.0))
    run_id = new_run_id()
    recorder = window._recorder_for(priced_as, spec, run_id) if priced_as is not None else None
    job = window.bridge.start_run(transport, spec, run_id=run_id, recorder=recorder)
    view = window.runs.add_run(job, title)
    job.start()
    return view


def dark_palette() -> QPalette:
    """A dark palette as a desktop's dark theme would give (to check that nothing is hard-coded light)."""
    pal = QPalette()
    roles = {QPalette.ColorRole.Window: "#202124", QPalette.ColorRole.WindowText: "#e8eaed",
             QPalette.ColorRole.Base: "#171717", QPalette.ColorRole.AlternateBase: "#2a2a2a",
             QPalette.ColorRole.Text: "#e8eaed", QPalette.ColorRole.Button: "#2d2e30",
             QPalette.ColorRole.ButtonText: "#e8eaed", QPalette.ColorRole.Highlight: "#3b78c4",
             QPalette.ColorRole.HighlightedText: "#ffffff", QPalette.ColorRole.ToolTipBase: "#2d2e30",
             QPalette.ColorRole.ToolTipText: "#e8eaed", QPalette.ColorRole.PlaceholderText: "#9aa0a6"}
    for role, colour in roles.items():
        pal.setColor(role, QColor(colour))
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.WindowText, QPalette.ColorRole.ButtonText):
        pal.setColor(QPalette.ColorGroup.Disabled, role, QColor("#7f8388"))
    return pal


class Shots(ModelShots):
    """The views to render, in order; each method makes one PNG (issue 14's in app/ui/screenshot_models.py)."""

    def __init__(self, out: Path, paths: AppPaths) -> None:
        self.out, self.paths = out, paths
        self.saved: list[Path] = []
        self.settings_file = out / ".screenshots-settings.ini"
        self.samples = read_events(RUNS_DATA / "samples-trn1-2xlarge.jsonl")
        self._stored: list[str] | None = None

    def window(self, **kwargs) -> MainWindow:
        kwargs.setdefault("list_instances", False)  # screenshots never ask AWS about the user's instances
        return new_window(self.paths, self.settings_file, **kwargs)

    def save(self, window: MainWindow, name: str) -> None:
        save(window, self.out, name, self.saved)
        window.close()

    def shot_01_main_window(self) -> None:
        """What a new user sees: This computer probed and ticked, the quick-start workload, Run enabled."""
        window = self.window()
        wait_until(lambda: window.sidebar.rows["local"].status in ("ok", "failed"), 120, "the probe")
        self.save(window, "01-main-window.png")

    def shot_02_validation(self) -> None:
        """Validation as you type: the engine's sentence, the field marked, Run disabled."""
        window = self.window(load_models=False)
        wait_until(lambda: window.sidebar.rows["local"].status in ("ok", "failed"), 120, "the probe")
        window.workload.warmup.setValue(40)
        self.save(window, "02-validation.png")

    def shot_03_live_train(self) -> None:
        """A real tiny training run from the Run button, measured until its median is known to ±10 %."""
        window = self.window(probe_hosts=False)
        fill_tiny(window, "train", batch_sizes="8", steps=400, target_ci=10.0)
        run_from_button(window)
        self.save(window, "03-live-train.png")

    def shot_04_live_infer(self) -> None:
        """A real tiny inference sweep, its result table shown."""
        window = self.window(probe_hosts=False)
        fill_tiny(window, "infer", batch_sizes="1,4", duration=1.5, min_iters=100)
        run_from_button(window)
        window.runs.views[0].tabs.setCurrentIndex(1)
        self.save(window, "04-live-infer.png")

    def shot_30_live_generate(self) -> None:
        """A new user's "Generate" on This computer: the tiny random Llama, TTFT and TPOT per call, the sweep."""
        window = self.window(probe_hosts=False)
        form = window.workload
        form.workload.setCurrentIndex(form.workload.findData("generate"))  # picks the tiny Llama preset
        form.backend.setCurrentText("cpu")
        run_from_button(window)
        window.runs.views[0].tabs.setCurrentIndex(2)
        self.save(window, "30-live-generate.png")

    def shot_31_live_serve(self) -> None:
        """A new user's "Serve" on This computer: transformers serve of the tiny random Llama, per-level TTFT/TPOT
        and the throughput-latency curve, with an SLO."""
        window = self.window(probe_hosts=False)
        form = window.workload
        form.workload.setCurrentIndex(form.workload.findData("serve"))  # picks the tiny-serve preset
        form.slo.setText("ttft_p99=300ms,tpot_p99=50ms")
        run_from_button(window, timeout=400)
        window.runs.views[0].tabs.setCurrentIndex(2)
        self.save(window, "31-live-serve.png")

    def shot_05_live_telemetry(self) -> None:
        """A recorded torch-xla run, looped, with neuron-monitor samples of a trn1.2xlarge training."""
        window = self.window(probe_hosts=False, load_models=False)
        view = replay_job(window, "train-xla-tiny.events.jsonl", "replay: trn1.2xlarge telemetry", self.samples,
                          loops=6)
        wait_until(lambda: view.state.finished, 60, "the telemetry replay")
        self.save(window, "05-live-telemetry.png")

    def shot_06_side_by_side(self) -> None:
        """Several hosts side by side, caught mid-run."""
        window = self.window(probe_hosts=False, load_models=False)
        views = [replay_job(window, "train-xla-tiny.events.jsonl", "replay: trn1 (xla)", self.samples, loops=40,
                            pace_s=0.004),
                 replay_job(window, "infer-cpu-tiny.events.jsonl", "replay: inf2 (infer)", self.samples[10:],
                            loops=40, pace_s=0.004),
                 replay_job(window, "train-cpu-tiny.events.jsonl", "replay: c7i (cpu)", [], loops=40, pace_s=0.004)]
        wait_until(lambda: all(v.state.events_seen > 400 for v in views), 60, "the side-by-side replays")
        settle()
        grab = window.grab()
        window.cancel_runs()
        wait_until(lambda: not window.runs.active_views(), 30, "the replays to stop")
        path = self.out / "06-side-by-side.png"
        grab.save(str(path))
        self.saved.append(path)
        window.close()

    def shot_07_error(self) -> None:
        """An error from the engine: an unknown model (the sentence; "Details" appears when there is evidence)."""
        window = self.window(probe_hosts=False)
        fill_tiny(window, "train", batch_sizes="4", steps=6, model="vit_tinny_patch16_224")
        run_from_button(window)
        wait_until(lambda: bool(window.errors.entries), 10, "the error panel")
        self.save(window, "07-error.png")

    def shot_08_dark_palette(self) -> None:
        """The same app under a dark system palette."""
        app = make_application()
        style, palette = app.style().name(), app.palette()
        app.setStyle(QStyleFactory.create("Fusion"))
        app.setPalette(dark_palette())
        try:
            window = self.window(probe_hosts=False, load_models=False)
            view = replay_job(window, "infer-cpu-tiny.events.jsonl", "replay: inf2 (dark palette)",
                              self.samples[12:], loops=3)
            wait_until(lambda: view.state.finished, 60, "the dark-palette replay")
            self.save(window, "08-dark-palette.png")
        finally:
            app.setStyle(QStyleFactory.create(style))
            app.setPalette(palette)

    def shot_21_live_cpu_2vcpu(self) -> None:
        """A real run recorded on a 2-vCPU machine with its /proc telemetry: both vCPUs, the host's memory."""
        window = self.window(probe_hosts=False, load_models=False)
        view = replay_job(window, "train-cpu-2vcpu-telemetry.events.jsonl", "replay: 2-vCPU CPU host (real run)",
                          [], recorded_times=True)
        wait_until(lambda: view.state.finished, 60, "the 2-vCPU replay")
        self.save(window, "21-live-cpu-2vcpu.png")

    def shot_22_live_cpu_192vcpu(self) -> None:
        """A training on a 192-vCPU CPU host (synthetic samples: no such machine here), looped."""
        window = self.window(probe_hosts=False, load_models=False)
        view = replay_job(window, "train-cpu-tiny.events.jsonl", "replay: 192-vCPU CPU host (synthetic telemetry)",
                          cpu_host_samples(192, 80), loops=12)
        wait_until(lambda: view.state.finished, 60, "the 192-vCPU replay")
        self.save(window, "22-live-cpu-192vcpu.png")

    def shot_27_live_trn1_32xlarge(self) -> None:
        """A trn1.32xlarge training with one Neuron runtime per NeuronCore (32), replayed with the agent's mapping
        of a generated 32-runtime neuron-monitor report; recorded as a run priced as trn1.32xlarge, finished."""
        window = self.window(probe_hosts=False, load_models=False)
        host = HostProfile(name="trn1n-replay", hostname="trn1n.example", instance_type="trn1.32xlarge",
                           region="us-east-1")
        view = replay_job(window, "train-xla-tiny.events.jsonl", "replay: trn1.32xlarge, 32 runtimes",
                          read_events(RUNS_DATA / "samples-trn1-32xlarge.jsonl"), loops=4, priced_as=host)
        wait_until(lambda: view.done, 60, "the trn1.32xlarge replay")
        self.save(window, "27-live-trn1-32xlarge-finished.png")

    def stored_runs(self) -> list[str]:
        """Three real tiny runs recorded in the store (once), priced as trn1.2xlarge and inf2.xlarge hosts."""
        if self._stored is None:
            book = load_pricebook(self.paths)
            tiny = {"model": "vit_tiny_patch16_224", "model_args": dict(TINY_VIT_ARGS), "backend": "cpu",
                    "workers": 0}
            runs = (("trn1-box", "trn1.2xlarge", RunSpec(workload="train", batch_sizes=(8,), steps=40, warmup=5,
                                                          **tiny)),
                    ("inf2-box", "inf2.xlarge", RunSpec(workload="train", batch_sizes=(8,), steps=40, warmup=5,
                                                         **tiny)),
                    ("inf2-box", "inf2.xlarge", RunSpec(workload="infer", batch_sizes=(1, 4, 16), duration=1.0,
                                                         min_iters=100, warmup=3, **tiny)))
            with RunStore(self.paths.runs_db) as store:
                self._stored = [run_recorded(LocalTransport(self.paths, host=host), spec, store, book, itype,
                                             "us-east-1")["run_id"] for host, itype, spec in runs]
        return self._stored

    def view(self, widget: QWidget, name: str, bridge: Bridge) -> None:
        widget.resize(*WINDOW_SIZE)
        widget.show()
        try:
            save(widget, self.out, name, self.saved)
        finally:
            widget.close()
            bridge.shutdown()

    def shot_09_history(self) -> None:
        """The run history: real stored runs, two selected for comparison."""
        ids = self.stored_runs()
        bridge = Bridge()
        view = HistoryView(self.paths, bridge)
        view.refresh()
        wait_until(lambda: not view.loading, 30, "the history")
        view.select_runs(ids[:2])
        self.view(view, "09-history.png", bridge)

    def shot_10_compare(self) -> None:
        """The comparison of the stored runs: decision summary, table, your job, bars, latency vs throughput."""
        ids = self.stored_runs()
        bridge = Bridge()
        view = CompareView(self.paths, bridge)
        # A job sized as a user would: 3 epochs of ImageNet-1k, 10 million requests.
        view.job_box.epochs.setValue(3)
        view.job_box.dataset.setText("1281167")
        view.job_box.requests.setText("10M")
        view.set_runs(ids)
        wait_until(lambda: view.doc is not None or view.status.is_error, 60, "the comparison")
        self.view(view, "10-compare.png", bridge)

    def shot_28_compare_empty(self) -> None:
        """Compare before any runs are chosen: the hint, the table's header without columns no run has, no axes."""
        bridge = Bridge()
        self.view(CompareView(self.paths, bridge), "28-compare-empty.png", bridge)

    def shot_23_compare_scaling(self) -> None:
        """Compare on a real 1-node run and a real 2-node run (two agents on this computer with homes of their own,
        torchrun's rendezvous over loopback), priced as trn1.32xlarge: speed-up, efficiency, the scaling chart."""
        spec = RunSpec(workload="train", model="vit_tiny_patch16_224", model_args=dict(TINY_VIT_ARGS), backend="cpu",
                       workers=0, batch_sizes=(8,), steps=40, warmup=5)
        book = load_pricebook(self.paths)
        other = AppPaths.resolve(self.paths.data / "second-node")  # node b: an agent home of its own
        with RunStore(self.paths.runs_db) as store:
            one = run_recorded(LocalTransport(self.paths, host="trn-a"), spec, store, book, "trn1.32xlarge",
                               "us-east-1")
            two_spec = build_spec(spec, nnodes=2)
            cluster = ClusterRun([NodeTarget(LocalTransport(self.paths, host="trn-a"), "127.0.0.1"),
                                  NodeTarget(LocalTransport(other, host="trn-b"), "127.0.0.1")], two_spec)
            recorder = RunRecorder.start(store, book, cluster.host, two_spec, cluster.run_id,
                                         declared_type="trn1.32xlarge", declared_region="us-east-1")
            cluster.on_event = recorder
            two = recorder.finish(cluster.run())
        bridge = Bridge()
        view = CompareView(self.paths, bridge)
        view.set_runs([one["run_id"], two["run_id"]])
        wait_until(lambda: view.doc is not None or view.status.is_error, 60, "the comparison")
        self.view(view, "23-compare-scaling.png", bridge)

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
        job = RunJob(_NeverStarted(profile.name), window.workload.spec(), window.bridge)
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
        job = RunJob(_NeverStarted(profile.name), spec, window.bridge)
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

    def all(self) -> list[str]:
        return sorted(name for name in dir(self) if name.startswith("shot_"))


def render_all(out: Path, paths: AppPaths, only: list[str] | None = None) -> list[Path]:
    """Render every view (or those whose number is in ``only``); returns the files written."""
    make_application()
    shots = Shots(out, paths)
    for name in shots.all():
        if only and name.split("_")[1] not in only:
            continue
        getattr(shots, name)()
    return shots.saved


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.ui.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("outdir", help="folder for the PNG files (created if missing)")
    parser.add_argument("--data-dir", help="NeuronBench data folder for the real runs (default: a temporary one)")
    parser.add_argument("--only", help="comma-separated view numbers to render, e.g. 05,06 (default: all)")
    args = parser.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="nb-screens-") as scratch:
        paths = AppPaths.resolve(args.data_dir or scratch)
        saved = render_all(out, paths, args.only.split(",") if args.only else None)
    print("\n".join(str(p) for p in saved))
    return 0


if __name__ == "__main__":
    sys.exit(main())
