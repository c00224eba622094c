"""Live views fed through the real session layer (EventStream over a replayed agent), as a user sees them."""
from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from app.core.hosts import HostProfile
from app.core.numbers import usd
from app.ui.widgets.runs_area import columns_for
from tests.ui.conftest import RUNS, recorded, replay_transport

SAMPLES = recorded("samples-trn1-2xlarge.jsonl")


class ReplayHosts:
    """A HostProvider whose hosts replay recorded runs (the session layer and the views are the real ones)."""

    def __init__(self, **transports) -> None:
        self.transports = transports
        for name, transport in transports.items():
            transport.host = name

    def hosts(self) -> list[HostProfile]:
        return [HostProfile(name=name, hostname=f"{name}.example") for name in self.transports]

    def transport_for(self, host: HostProfile):
        return self.transports[host.name]

    def price(self, host, instance_type, region=None):
        return None


def run_to_the_end(window, qtbot, timeout: int = 30_000):
    qtbot.mouseClick(window.run_button, qtbot_button())
    qtbot.waitUntil(lambda: bool(window.runs.views) and not window.runs.active_views(), timeout=timeout)
    for view in window.runs.views:
        view.refresh()
    return window.runs.views


def qtbot_button():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_two_hosts_run_side_by_side_and_their_telemetry_is_drawn(make_window, qtbot):
    provider = ReplayHosts(trn1=replay_transport(recorded("train-xla-tiny.events.jsonl"), SAMPLES, loops=6),
                           c7i=replay_transport(recorded("train-cpu-tiny.events.jsonl")))
    window = make_window(provider=provider)
    assert window.sidebar.checked() == []  # only "This computer" is ticked for a new user, and it is not here
    window.sidebar.set_checked("trn1", True)
    window.sidebar.set_checked("c7i", True)
    assert window.run_button.text() == "Run on the 2 selected hosts"
    trn1, c7i = run_to_the_end(window, qtbot)
    assert window.status_label.text() == "Finished: ok"
    # side by side (the area is wide enough for two), each view's charts stacked in one column
    assert window.runs.grid.getItemPosition(window.runs.grid.indexOf(c7i))[:2] == (
        (0, 1) if columns_for(2, window.runs.scroll.viewport().width()) == 2 else (1, 0))

    samples_seen = trn1.state.samples_seen
    last = SAMPLES[(samples_seen - 1) % len(SAMPLES)]
    heights = trn1.util.bars.bars.opts["height"]
    assert list(heights) == pytest.approx([d["util_pct"] for d in last["devices"]])
    assert [label.toPlainText() for label in trn1.util.bars.labels] == [
        f"{d['util_pct']:.0f}" for d in last["devices"]]
    assert trn1.util.heat.image.shape == (samples_seen, 2)
    used = trn1.memory.used.bars.opts["height"]
    assert list(used) == pytest.approx([d["mem_used"] / 1024 ** 3 for d in last["devices"]])
    assert "NeuronCore utilisation now" in trn1.util.bars_plot.titleLabel.text
    cpu = trn1.plot_data()["host_cpu"]
    assert len(cpu) == samples_seen and cpu[-1] == pytest.approx(last["host"]["cpu_pct"])
    assert f"host CPU {last['host']['cpu_pct']:.0f}%" in trn1.live_text()
    steps = trn1.plot_data()["step_time"]
    assert len(steps) == 6 * 30 and np.isnan(steps).sum() == 6 * 2  # compiled steps are markers, not line

    # the cpu host had no telemetry: it says so, and nothing is drawn as zero
    assert "no telemetry yet" in c7i.util.bars_plot.titleLabel.text
    assert "no telemetry yet" in c7i.host_plot.titleLabel.text
    assert "host CPU N/A" in c7i.live_text() and "memory N/A" in c7i.live_text()
    assert len(c7i.plot_data()["host_cpu"]) == 0 and len(c7i.util.bars.bars.opts["height"]) == 0
    assert "throughput" in c7i.result_text.toPlainText()


def test_a_metric_the_host_could_not_read_is_shown_as_na_with_its_reason(make_window, qtbot):
    sample = {"v": 1, "seq": 1, "t": 0.0, "type": "sample", "source": "nvidia-smi", "period_s": 1.0,
              "host": {"cpu_pct": 12.5, "cpu_per_core_pct": None, "mem_used": None, "mem_total": None},
              "devices": [{"index": 0, "kind": "gpu", "util_pct": None, "mem_used": None, "mem_total": None}],
              "runtime": None, "process": None,
              "missing": {"devices.0.util_pct": "nvidia-smi: [Not Supported]",
                          "host.mem_used": "/proc/meminfo unreadable"}}
    provider = ReplayHosts(g5=replay_transport(recorded("train-cpu-tiny.events.jsonl"), [sample]))
    window = make_window(provider=provider)
    window.sidebar.set_checked(provider.hosts()[0].name, True)
    (view,) = run_to_the_end(window, qtbot)
    assert view.util.bars_plot.titleLabel.text == "GPU utilisation now (%) · N/A: nvidia-smi: [Not Supported]"
    assert [label.toPlainText() for label in view.util.bars.labels] == ["N/A"]
    assert len(view.util.bars.bars.opts["height"]) == 0  # no bar at all, not a bar at zero
    assert "memory N/A" in view.live_text() and "host CPU 12%" in view.live_text()
    memory = view.memory.plot.titleLabel  # too long for the chart: cut, and whole on its tooltip
    assert memory.text.startswith("Memory per GPU (GiB, of total) · N/A: nvidia-smi") and memory.text.endswith("…")
    assert memory.toolTip() == "Memory per GPU (GiB, of total) · N/A: nvidia-smi: [Not Supported]"


def test_an_agent_that_dies_mid_run_is_one_error_and_keeps_everything_received(make_window, qtbot):
    events = recorded("train-cpu-tiny.events.jsonl")
    cut = [e for e in events if e["type"] not in ("result", "end")][:30]  # the stream stops mid-run
    provider = ReplayHosts(flaky=replay_transport(cut))
    window = make_window(provider=provider)
    window.sidebar.set_checked("flaky", True)
    qtbot.mouseClick(window.run_button, qtbot_button())
    qtbot.waitUntil(lambda: bool(window.errors.entries), timeout=20_000)
    (view,) = window.runs.views
    view.refresh()
    entry = window.errors.entries[0]
    assert entry.title.text() == "<b>flaky: the run failed</b>"
    assert entry.message.text() == "the agent on flaky stopped before the run ended: it printed nothing on stderr"
    assert view.state.status == "failed" and view.activity.text() == "failed"
    received_steps = sum(1 for e in cut if e["type"] == "step")
    assert len(view.plot_data()["step_time"]) == received_steps > 0
    log = view.log.text()
    assert "workload process" in log and "stopped before the run ended" in log
    assert window.run_button.isEnabled()  # a new run can start


def test_the_details_expander_holds_the_evidence(make_window, qtbot):
    window = make_window()
    entry = window.errors.show_error("local: the run failed", "out of memory during measure: try a smaller "
                                     "--batch-size", "Traceback (most recent call last):\n  ...\nRuntimeError")
    assert window.errors.isVisible() and not entry.details.isVisible()
    qtbot.mouseClick(entry.details_button, qtbot_button())
    assert entry.details.isVisible() and entry.details.toPlainText().endswith("RuntimeError")
    bare = window.errors.show_error("local: probe failed", "no python3 on PATH", "")
    assert not bare.details_button.isVisibleTo(bare)  # nothing to expand
    assert window.errors.entries[0] is bare
    window.errors.clear()
    qtbot.waitUntil(lambda: not window.errors.isVisible())


def test_services_call_back_on_the_run_thread_and_views_apply_events_on_the_ui_thread(make_window, qtbot):
    from PySide6.QtCore import Qt

    provider = ReplayHosts(trn1=replay_transport(recorded("train-xla-tiny.events.jsonl"), SAMPLES[:5], pace_s=0.01))
    window = make_window(provider=provider)
    window.sidebar.set_checked("trn1", True)
    (view,) = window.start_runs()
    emitted_on: set[str] = set()
    applied_on: set[str] = set()
    view.job.event.connect(lambda _e: emitted_on.add(threading.current_thread().name),
                           Qt.ConnectionType.DirectConnection)
    apply = view.state.apply

    def recording_apply(event):
        applied_on.add(threading.current_thread().name)
        apply(event)

    view.state.apply = recording_apply
    qtbot.waitUntil(lambda: not window.runs.active_views(), timeout=20_000)
    assert emitted_on == {"run-trn1"}
    assert applied_on == {threading.main_thread().name}
    assert view.state.status == "ok"
    assert window.store.get_run(view.job.run_id).status == "ok"
    assert window.unfinished_runs() == []


def test_the_phase_band_shows_each_phase_over_the_time_axis(make_window, qtbot):
    provider = ReplayHosts(trn1=replay_transport(recorded("train-xla-tiny.events.jsonl")))
    window = make_window(provider=provider)
    window.sidebar.set_checked(provider.hosts()[0].name, True)
    (view,) = run_to_the_end(window, qtbot)
    band = view.bands[0]
    spans = list(view.state.phases)
    assert [s.name for s in spans].count("compile") == 2
    # one bar per phase, from its start to its end, on the run's time axis
    assert list(band.bars.opts["x0"]) == pytest.approx([s.start for s in spans])
    assert list(band.bars.opts["width"]) == pytest.approx([s.end - s.start for s in spans])
    assert "measure" in band.shown_labels()  # the long phase is named; short ones are colour only
    assert len(band.shown_labels()) < len(spans)


def test_a_trn1_32xlarge_with_one_runtime_per_core_draws_every_core_busy(make_window, qtbot):
    # The agent's own mapping of the recorded 32-runtime reports (each runtime lists all 32 cores, idle ones
    # at 0), as the sampler sends them: every core is as busy as the worker that uses it.
    from remote_agent.monitor.neuron import map_report
    from remote_agent.monitor.sampler import merge

    reports = (RUNS.parent / "neuron" / "neuron-monitor-trn1-32xlarge.jsonl").read_text().splitlines()[2:]
    samples = [{"v": 1, "seq": 0, "t": 0.0, "type": "sample",
                **merge([("neuron-monitor", map_report(json.loads(r)))], 1.0)} for r in reports]
    provider = ReplayHosts(trn1n=replay_transport(recorded("train-xla-tiny.events.jsonl"), samples))
    window = make_window(provider=provider)
    window.sidebar.set_checked("trn1n", True)
    (view,) = run_to_the_end(window, qtbot)
    last = samples[(view.state.samples_seen - 1) % len(samples)]
    heights = list(view.util.bars.bars.opts["height"])
    assert len(heights) == 32 and min(heights) > 70, heights
    assert heights == pytest.approx([d["util_pct"] for d in last["devices"]])
    assert view.util.heat.image.shape[1] == 32 and float(np.nanmin(view.util.heat.image)) > 70
    assert list(view.memory.used.bars.opts["height"]) == pytest.approx([4157997056 / 1024 ** 3] * 32)


class PricedReplayHosts(ReplayHosts):
    """Replayed hosts declared as a given instance type: their runs are priced from the price book."""

    def __init__(self, instance_type: str, **transports) -> None:
        super().__init__(**transports)
        self.instance_type = instance_type

    def hosts(self) -> list[HostProfile]:
        return [HostProfile(name=name, hostname=f"{name}.example", instance_type=self.instance_type,
                            region="us-east-1") for name in self.transports]


def test_a_finished_training_shows_the_results_median_interval_throughput_and_cost(make_window, qtbot):
    events = recorded("train-xla-tiny.events.jsonl")
    provider = PricedReplayHosts("trn1.2xlarge", trn1=replay_transport(events))
    window = make_window(provider=provider)
    window.sidebar.set_checked("trn1", True)
    (view,) = run_to_the_end(window, qtbot)
    result = view.state.result
    train, cost = result["train"], result["cost"]
    median, (low, high) = train["step_time_s"]["median"], train["step_time_s"]["ci95"]
    text = view.figures.text()
    # The steady window of the Result (the CLI summary's numbers), not the last 20 steps' rolling figures.
    assert f"step time median <b>{median:.4f} s</b> (95% CI {low:.4f}–{high:.4f})" in text
    assert f"throughput <b>{train['throughput_samples_per_s']:.2f} samples/s</b>" in text
    assert f"<b>{usd(cost['usd_per_1m_samples'])}</b> per 1M samples" in text and cost["usd_per_hour"] > 0
    assert f"{train['steps_measured']} of {train['steps_total']} steps measured" in text
    assert "last 20" not in text and "host CPU" not in text


def test_a_finished_inference_sweep_shows_each_batch_sizes_figures(make_window, qtbot):
    provider = PricedReplayHosts("inf2.xlarge", inf2=replay_transport(recorded("infer-cpu-tiny.events.jsonl")))
    window = make_window(provider=provider)
    window.sidebar.set_checked("inf2", True)
    (view,) = run_to_the_end(window, qtbot)
    result = view.state.result
    per_1m = {c["batch_size"]: c["usd_per_1m"] for c in result["cost"]["usd_per_1m_inferences"]}
    text = view.figures.text()
    for row in result["infer"]:
        assert (f"batch {row['batch_size']}: p50 <b>{row['latency_ms']['p50']:.2f} ms</b>, "
                f"p99 <b>{row['latency_ms']['p99']:.2f} ms</b>, <b>{row['throughput_per_s']:.1f} samples/s</b>, "
                f"<b>{usd(per_1m[row['batch_size']])}</b> per 1M inferences") in text


def test_an_unpriced_finished_run_shows_no_cost_rather_than_a_zero(make_window, qtbot):
    provider = ReplayHosts(box=replay_transport(recorded("train-cpu-tiny.events.jsonl")))
    window = make_window(provider=provider)
    window.sidebar.set_checked("box", True)
    (view,) = run_to_the_end(window, qtbot)
    text = view.figures.text()
    assert "steps measured" in text and "step time median <b>" in text and "$" not in text


def test_a_run_that_failed_before_measuring_says_so_on_its_status_line(make_window, qtbot):
    provider = ReplayHosts(h100=replay_transport(recorded("h100-train-nproc2-on-1-gpu-failed.events.jsonl")))
    window = make_window(provider=provider)
    window.sidebar.set_checked("h100", True)
    (view,) = run_to_the_end(window, qtbot)
    text = view.figures.text()
    assert text == "no figures: the run failed (setup failed: AcceleratorError: CUDA error: invalid device ordinal)"
    assert "step time" not in text and "throughput" not in text


def test_a_finished_text_model_sweep_keeps_tokens_per_s_the_length_and_the_check(make_window, qtbot):
    provider = PricedReplayHosts("inf2.xlarge",
                                 inf2=replay_transport(recorded("infer-hf-tiny-bert-sweep.events.jsonl")))
    window = make_window(provider=provider)
    window.sidebar.set_checked("inf2", True)
    (view,) = run_to_the_end(window, qtbot)
    text = view.figures.text()
    result = view.state.result
    cost = {(c["batch_size"], c["seq_len"]): c["usd_per_1m"] for c in result["cost"]["usd_per_1m_inferences"]}
    for row in result["infer"]:
        latency = row["latency_ms"]
        rough = "" if row["p99_reliable"] else " (rough: under 100 requests)"
        assert (f"batch {row['batch_size']} seq {row['seq_len']}: p50 <b>{latency['p50']:.2f} ms</b>, "
                f"p99 <b>{latency['p99']:.2f} ms</b>{rough}, <b>{row['throughput_per_s']:.1f} samples/s</b> · "
                f"<b>{row['tokens_per_s']:,.0f} tokens/s</b>, "
                f"<b>{usd(cost[row['batch_size'], row['seq_len']])}</b> per 1M inferences, check <b>ok</b>") in text
