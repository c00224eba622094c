"""LiveRunState: recorded real runs and telemetry samples in, the figures the charts draw out."""
from __future__ import annotations

import statistics

import numpy as np
import pytest

from app.ui.models.ring import Ring
from app.ui.models.run_state import LiveRunState, missing_reason
from tests.ui.conftest import recorded, spec_of


def replayed(name: str, samples: list[dict] = ()) -> LiveRunState:
    events = recorded(name)
    state = LiveRunState("replay", spec_of(events))
    for event in events:
        state.apply(event)
    for sample in samples:
        state.apply(sample)
    return state


def test_a_recorded_xla_training_gives_steps_compiles_phases_and_progress():
    events = recorded("train-xla-tiny.events.jsonl")
    state = replayed("train-xla-tiny.events.jsonl")
    steps = [e for e in events if e["type"] == "step"]
    assert state.status == "ok" and state.progress.fraction == 1.0 and state.result["status"] == "ok"
    assert len(state.steps) == len(steps) == 30
    compiled = [s for s in steps if s["compiled"]]
    assert len(state.compiled_steps) == len(compiled) == 2
    # the rolling median is that of the last 20 steps that did not compile
    steady = [s["dt_s"] for s in steps if not s["compiled"]]
    assert state.latest_step_median() == pytest.approx(statistics.median(steady[-20:]))
    # throughput: samples over time of those same steps
    assert state.latest_throughput() == pytest.approx(8 * 20 / sum(steady[-20:]))
    names = [span.name for span in state.phases]
    assert names.count("compile") == 2 and "warmup" in names and "measure" in names
    assert all(span.end is not None and span.end >= span.start for span in state.phases)
    t0 = events[0]["t"]
    assert state.steps.array()[-1, 0] == pytest.approx(steps[-1]["t"] - t0)


def test_a_recorded_inference_sweep_gives_latency_windows_with_a_gap_between_sizes():
    events = recorded("infer-cpu-tiny.events.jsonl")
    state = replayed("infer-cpu-tiny.events.jsonl")
    windows = [e for e in events if e["type"] == "latency"]
    latency = state.latency.array()
    assert len(latency) == len(windows) + 1  # one NaN row starts batch size 4's curve afresh
    gap = np.flatnonzero(np.isnan(latency[:, 2]))
    assert len(gap) == 1 and latency[gap[0] - 1, 1] == 1 and latency[gap[0] + 1, 1] == 4
    p50, _p90, p99 = state.latest_latency()
    assert (p50, p99) == (pytest.approx(windows[-1]["p50_ms"]), pytest.approx(windows[-1]["p99_ms"]))
    # throughput of a window: its requests x batch size / the window's length
    first = windows[0]
    measure = next(e for e in events if e["type"] == "phase" and e["name"] == "measure")
    assert state.infer_throughput.array()[0, 1] == pytest.approx(first["count"] / (first["t"] - measure["t"]))
    assert state.progress.fraction == 1.0


def test_telemetry_samples_fill_the_device_and_host_series():
    samples = recorded("samples-trn1-2xlarge.jsonl")
    state = replayed("train-xla-tiny.events.jsonl", samples)
    assert state.samples_seen == len(samples) and state.sample_source == "neuron-monitor"
    last = samples[-1]
    assert [d.util_pct for d in state.devices] == [d["util_pct"] for d in last["devices"]]
    assert [d.mem_used for d in state.devices] == [d["mem_used"] for d in last["devices"]]
    assert state.device_kind == "neuroncore"
    heat = state.heat.array()
    assert heat.shape == (len(samples), 3)  # time + two NeuronCores
    cpu, mem = state.latest_host()
    assert cpu == pytest.approx(last["host"]["cpu_pct"])
    assert mem == pytest.approx(100 * last["host"]["mem_used"] / last["host"]["mem_total"])


def test_a_metric_that_could_not_be_read_stays_missing_with_its_reason():
    first = recorded("samples-trn1-2xlarge.jsonl")[0]  # neuron-monitor's start-up record: no runtime yet
    state = replayed("train-cpu-tiny.events.jsonl", [first])
    assert [d.util_pct for d in state.devices] == [None, None]
    assert state.latest_host()[0] is None  # not 0 %
    assert np.isnan(state.heat.array()[0, 1:]).all()
    assert missing_reason(state.missing, "devices", "?") == "no Neuron runtime uses this NeuronCore yet"
    assert missing_reason(state.missing, "host.cpu_pct", "?").startswith("neuron-monitor has not reported")
    assert missing_reason(state.missing, "process", "not reported") == "not reported"


def test_a_run_without_telemetry_says_so():
    state = replayed("train-cpu-tiny.events.jsonl")
    assert state.samples_seen == 0 and state.devices == [] and state.heat is None
    assert state.latest_host() == (None, None)


def test_a_failure_outside_the_stream_keeps_what_was_received():
    events = recorded("train-cpu-tiny.events.jsonl")
    state = LiveRunState("local", spec_of(events))
    for event in events[:20]:
        state.apply(event)
    received = len(state.steps)
    state.fail("the agent on local stopped before the run ended: Killed", detail="stderr tail")
    assert state.status == "failed" and state.error["detail"] == "stderr tail"
    assert len(state.steps) == received > 0
    assert state.take_new_logs()[-1][1:] == ("error", "the agent on local stopped before the run ended: Killed")


def test_ring_buffers_keep_the_latest_rows_in_order_and_never_grow():
    ring = Ring(4, 2)
    for i in range(10):
        ring.append(i, None if i % 3 else i * 10)
    data = ring.array()
    assert data[:, 0].tolist() == [6, 7, 8, 9] and len(ring) == 4 and ring.appended == 10
    assert np.isnan(data[1, 1]) and data[0, 1] == 60
    assert ring.last()[0] == 9
    with pytest.raises(ValueError):
        ring.append(1)


def _steps(spec, dts: list[float], compiled: tuple[int, ...] = (), samples: int = 8) -> list[dict]:
    """A hello and one step event per ``dts`` entry, one after the other on the host's clock."""
    events, t = [{"type": "hello", "t": 0.0, "agent_version": "test", "python": "3.10", "run_id": "r"}], 0.0
    for i, dt in enumerate(dts, 1):
        t += dt
        events.append({"type": "step", "t": t, "i": i, "dt_s": dt, "samples": samples, "compiled": i in compiled})
    return events


def test_throughput_of_a_steady_run_plots_flat_and_leaves_the_warm_up_out():
    events = recorded("train-cpu-tiny.events.jsonl")
    spec = spec_of(events)  # 40 steps, 5 of warm-up
    state = LiveRunState("local", spec)
    # warm-up steps are slow (allocators, caches): 1 s each, then a steady 0.1 s per step of 8 samples
    for event in _steps(spec, [1.0] * spec.warmup + [0.1] * (spec.steps - spec.warmup)):
        state.apply(event)
    steps = state.steps.array()
    warmup, steady = steps[: spec.warmup], steps[spec.warmup:]
    assert np.isnan(warmup[:, 3]).all() and np.isnan(warmup[:, 2]).all()  # no figure before the steady window
    assert steady[:, 3] == pytest.approx([80.0] * len(steady))  # flat from the first steady step on
    assert steady[:, 2] == pytest.approx([0.1] * len(steady))
    assert state.latest_throughput() == pytest.approx(80.0)


def test_a_recompilation_restarts_the_rolling_window_as_it_restarts_the_results():
    events = recorded("train-cpu-tiny.events.jsonl")
    spec = spec_of(events)
    state = LiveRunState("local", spec)
    # steps 6-19 at 0.1 s, step 20 compiles a new graph, then the new graph runs at 0.2 s a step
    dts = [0.1] * 19 + [3.0] + [0.2] * 20
    for event in _steps(spec, dts, compiled=(20,)):
        state.apply(event)
    steps = state.steps.array()
    assert steps[18, 3] == pytest.approx(80.0)
    assert np.isnan(steps[19, 3])  # the compiled step is a marker, not a figure
    assert steps[20:, 3] == pytest.approx([40.0] * 20)  # not a blend of the old graph's steps and the new
    assert state.latest_step_median() == pytest.approx(0.2)


def test_a_cpu_hosts_samples_give_one_row_per_vcpu_and_host_memory_as_one_figure():
    from app.services.synthetic_telemetry import cpu_host_sample

    state = replayed("train-cpu-tiny.events.jsonl")
    gib = 1024 ** 3
    state.apply(cpu_host_sample([91.0, 12.0], 5 * gib, 23 * gib, t=state.t0 + 1))
    state.apply(cpu_host_sample([95.0, 10.0], 6 * gib, 23 * gib, t=state.t0 + 2))
    assert [(c.index, c.kind, c.util_pct) for c in state.cores] == [(0, "vcpu", 95.0), (1, "vcpu", 10.0)]
    heat = state.heat.array()
    assert heat.shape == (2, 3) and heat[:, 1].tolist() == [91.0, 95.0] and heat[:, 2].tolist() == [12.0, 10.0]
    assert state.cpu_host and (state.host_now.mem_used, state.host_now.mem_total) == (6 * gib, 23 * gib)
    assert state.host_series.array()[:, 3].tolist() == [5.0, 6.0]  # GiB used over time


def test_192_vcpus_are_all_kept():
    from app.services.synthetic_telemetry import cpu_host_samples

    state = replayed("train-cpu-tiny.events.jsonl", cpu_host_samples(192, 5))
    assert len(state.cores) == 192 and state.heat.array().shape == (5, 193)


def test_a_sample_from_an_agent_without_per_vcpu_figures_falls_back_to_the_hosts_total():
    from app.services.synthetic_telemetry import cpu_host_sample

    state = replayed("train-cpu-tiny.events.jsonl")
    old = cpu_host_sample([40.0, 60.0], 1, 2, t=state.t0 + 1)
    del old["host"]["cpu_per_core_pct"]  # an agent of before the per-vCPU figures
    state.apply(old)
    assert [(c.kind, c.util_pct) for c in state.cores] == [("cpu", 50.0)]
    assert state.heat.array().shape == (1, 2)
