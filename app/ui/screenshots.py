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
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QStyleFactory, QWidget

from app.core.hosts import HostProfile
from app.core.presets import TINY_VIT_ARGS
from app.core.specs import build_spec
from app.paths import AppPaths
from app.services.cluster_run import ClusterRun, NodeTarget
from app.services.pricing import load_pricebook
from app.services.recorder import RunRecorder, run_recorded
from app.services.replay import read_events
from app.services.store import RunStore
from app.services.synthetic_telemetry import cpu_host_samples
from app.services.transport import LocalTransport
from app.ui.app import make_application
from app.ui.bridge import Bridge
from app.ui.main_window import MainWindow
from app.ui.screenshot_hosts import HostShots
from app.ui.screenshot_kit import (
    RUNS_DATA,
    WINDOW_SIZE,
    dark_palette,
    fill_tiny,
    new_window,
    replay_job,
    save,
)
from app.ui.screenshot_models import ModelShots
from app.ui.screenshot_steps import run_from_button, settle, wait_until
from app.ui.views.compare_view import CompareView
from app.ui.views.history_view import HistoryView
from remote_agent.protocol import RunSpec


class Shots(ModelShots, HostShots):
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
