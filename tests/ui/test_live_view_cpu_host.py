"""The live view of a run on a CPU-only host: every vCPU, the host's memory as one figure, a flat throughput.

Fed through the real session layer: a real run recorded on this project's 2-vCPU machine (its own /proc
telemetry), and for a host no machine here has, 192 vCPUs of synthetic samples in the agent's format.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from app.core.step_window import SteadyWindow
from app.services.replay import run_body
from app.services.synthetic_telemetry import cpu_host_sample, cpu_host_samples
from tests.ui.conftest import recorded, replay_transport, spec_of
from tests.ui.test_live_views import ReplayHosts, run_to_the_end

GIB = 1024 ** 3
REAL_2VCPU = "train-cpu-2vcpu-telemetry.events.jsonl"


def run_view(make_window, qtbot, events, samples=(), size=(1440, 900)):
    provider = ReplayHosts(cpu=replay_transport(events, list(samples)))
    window = make_window(provider=provider)
    window.resize(*size)
    window.sidebar.set_checked("cpu", True)
    (view,) = run_to_the_end(window, qtbot)
    return view


def test_a_2_vcpu_host_shows_both_vcpus_and_its_memory_as_one_figure(make_window, qtbot):
    events = recorded(REAL_2VCPU)
    samples = [e for e in events if e["type"] == "sample"]
    view = run_view(make_window, qtbot, events)
    last = samples[-1]["host"]

    # one labelled bar per vCPU, not one "core 0" bar of the host's total
    assert view.util.bars_plot.titleLabel.text == "vCPU utilisation now (%)"
    assert list(view.util.bars.bars.opts["height"]) == pytest.approx(last["cpu_per_core_pct"])
    assert [label.toPlainText() for label in view.util.bars.labels] == [f"{p:.0f}" for p in last["cpu_per_core_pct"]]
    assert [text for _x, text in view.util.bars_plot.getAxis("bottom")._tickLevels[0]] == ["0", "1"]
    assert view.util.bars_plot.getAxis("bottom").labelText == "vCPU"
    # the heat strip: one row per vCPU, a column per sample
    assert view.util.heat.image.shape == (len(samples), 2)
    assert view.util.heat.image[:, 1] == pytest.approx([s["host"]["cpu_per_core_pct"][1] for s in samples])

    # memory: the host's used GiB over time against its total, not a "Memory per CPU" bar
    assert view.host_memory.plot.isVisible() and not view.memory.plot.isVisible()
    used, total = last["mem_used"] / GIB, last["mem_total"] / GIB
    assert view.host_memory.plot.titleLabel.text == (
        f"Host memory: {used:.1f} of {total:.1f} GiB used ({100 * used / total:.0f} %)")
    _x, curve = view.host_memory.used_curve.getOriginalDataset()
    assert curve == pytest.approx([s["host"]["mem_used"] / GIB for s in samples])
    assert view.host_memory.total_line.value() == pytest.approx(total)
    # swapping the memory chart in kept the charts filling the view (not squeezed to their minimum)
    assert view.charts.ci.geometry().height() == pytest.approx(view.charts.height())


def test_the_throughput_chart_is_the_steady_windows_and_ends_on_its_figure(make_window, qtbot):
    events = recorded(REAL_2VCPU)
    spec = spec_of(events)
    view = run_view(make_window, qtbot, events)
    throughput = view.plot_data()["throughput"]
    assert np.isnan(throughput[: spec.warmup]).all()  # warm-up steps are no figure, not a low one
    window = SteadyWindow(spec.warmup)
    expected = []
    for step in (e for e in events if e["type"] == "step"):
        expected.append(window.throughput if window.add(step) else np.nan)
    assert throughput == pytest.approx(np.array(expected), nan_ok=True)
    assert f"throughput <b>{throughput[-1]:,.1f} samples/s</b>" in view.live_text()


def test_a_steady_run_draws_a_flat_throughput(make_window, qtbot):
    events = recorded("train-cpu-tiny.events.jsonl")
    spec = spec_of(events)  # 40 steps of batch 8, 5 of warm-up
    # the recorded run with its warm-up made slow and its measured steps made even: 0.1 s each
    steady = [dict(e, dt_s=1.0 if e["i"] <= spec.warmup else 0.1) if e["type"] == "step" else e for e in events]
    view = run_view(make_window, qtbot, steady)
    throughput = view.plot_data()["throughput"]
    assert throughput[spec.warmup:] == pytest.approx([80.0] * (spec.steps - spec.warmup))


def test_192_vcpus_are_a_histogram_now_and_every_one_is_in_the_heat_strip(make_window, qtbot):
    events = recorded("train-cpu-tiny.events.jsonl")
    slots = len(run_body(events)[1]) // 10  # the replay sends a sample after every 10 events
    pegged = [0.0] * 192
    pegged[137] = 100.0  # one vCPU busy, all the others idle: it must not vanish from the strip
    samples = cpu_host_samples(192, slots - 1) + [cpu_host_sample(pegged, 40 * GIB, 768 * GIB)]
    view = run_view(make_window, qtbot, events, samples, size=(1440, 800))
    assert view.state.samples_seen == len(samples) and view.state.host_now.vcpu_pct == pegged
    util = view.util
    # "now": how many vCPUs are in each 10 % band (191 idle, one at 100 %), not 192 unreadable slivers
    assert util.histogram
    assert list(util.bars.bars.opts["height"]) == [191.0] + [0.0] * 8 + [1.0]
    assert [label.toPlainText() for label in util.bars.labels] == ["191"] + [""] * 8 + ["1"]
    assert util.bars_plot.titleLabel.text == "192 vCPUs by utilisation now · mean 1 %, max 100 %"
    # over time: every vCPU, rows merged by their busiest vCPU when the strip is too short for 192 rows
    assert util.per_row > 1, "a 192-row strip fits no chart of this window one pixel row per vCPU"
    image = util.heat.image
    assert image.shape == (len(samples), math.ceil(192 / util.per_row))
    assert image[-1, 137 // util.per_row] == 100.0 and np.delete(image[-1], 137 // util.per_row).max() == 0.0
    assert util.heat_plot.titleLabel.text == f"vCPU utilisation over time · {util.per_row} vCPUs a row, the busiest"
    assert util.heat_plot.viewRange()[1] == pytest.approx([0.0, 192.0])  # the axis counts vCPUs, not rows
