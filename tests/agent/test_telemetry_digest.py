"""The Result's telemetry block: utilisation over the measure phase(s), memory peaks over the run."""
from __future__ import annotations

import pytest

from remote_agent.monitor.digest import TelemetryDigest, measure_windows, switched_off


def sample(util0, util1=None, mem=(100, 200), host_mem=1000, rss=50, period=1.0, cpu=40.0):
    devices = [{"index": 0, "kind": "neuroncore", "util_pct": util0, "mem_used": mem[0], "mem_total": 16000},
               {"index": 1, "kind": "neuroncore", "util_pct": util1, "mem_used": mem[1], "mem_total": 16000}]
    missing = {} if util1 is not None else {"devices.1.util_pct": "neuron-monitor could not read counters"}
    return {"period_s": period, "devices": devices, "host": {"cpu_pct": cpu, "mem_used": host_mem, "mem_total": 4000},
            "process": {"cpu_pct": 10.0, "rss": rss}, "missing": missing}


def test_utilisation_is_summarised_over_the_measure_window_only():
    digest = TelemetryDigest(1.0, ["neuron-monitor", "procfs"])
    # t is when the sample was taken; it covers the second before.  Measure runs from 10 to 15.
    for t, util in [(9.0, 0.0), (10.0, 0.0), (11.0, 80.0), (12.0, 90.0), (13.0, 70.0), (14.0, 100.0),
                    (15.0, 60.0), (16.0, 0.0)]:
        digest.add(t, sample(util, util / 2))
    block = digest.summary(measure_windows([{"name": "measure", "state": "start", "t": 10.0},
                                            {"name": "measure", "state": "end", "t": 15.0}], 20.0))
    measure = block["measure"]
    assert measure["samples"] == 5 and measure["seconds"] == 5.0 and measure["windows"] == 1
    core0, core1 = measure["devices"]
    assert core0["util_mean_pct"] == pytest.approx(80.0)  # 80, 90, 70, 100, 60
    assert core0["util_p95_pct"] == pytest.approx(98.0)  # linear interpolation, as remote_agent.stats does
    assert core1["util_mean_pct"] == pytest.approx(40.0)
    assert measure["host_cpu_mean_pct"] == pytest.approx(40.0) and measure["process_cpu_mean_pct"] == 10.0
    assert block["samples"] == 8 and block["sources"] == ["neuron-monitor", "procfs"] and block["missing"] == {}


def test_peaks_cover_the_whole_run_per_device_and_in_total():
    digest = TelemetryDigest(1.0, ["procfs"])
    digest.add(1.0, sample(0.0, 0.0, mem=(500, 100), host_mem=3000, rss=900))  # compile: host memory peaks
    digest.add(2.0, sample(50.0, 50.0, mem=(300, 400), host_mem=2000, rss=700))
    peak = digest.summary([(1.5, 2.0)])["peak"]
    assert [(d["index"], d["mem_used"], d["mem_total"]) for d in peak["devices"]] == [(0, 500, 16000),
                                                                                      (1, 400, 16000)]
    assert peak["device_mem_used"] == 700  # the largest sum in one sample, not the sum of the peaks
    assert peak["host_mem_used"] == 3000 and peak["host_mem_total"] == 4000 and peak["process_rss"] == 900


def test_a_device_never_read_in_the_window_is_null_with_its_reason():
    digest = TelemetryDigest(1.0, ["neuron-monitor"])
    digest.add(2.0, sample(50.0, None))
    block = digest.summary([(0.0, 3.0)])
    core1 = block["measure"]["devices"][1]
    assert core1["util_mean_pct"] is None and core1["util_p95_pct"] is None
    assert block["missing"]["measure.devices.1.util_pct"] == "neuron-monitor could not read counters"


def test_a_measure_phase_shorter_than_the_period_says_so():
    digest = TelemetryDigest(1.0, ["procfs"])
    digest.add(1.0, sample(10.0, 10.0))
    digest.add(2.0, sample(10.0, 10.0))
    block = digest.summary([(1.7, 1.8)])
    assert block["measure"] is None
    assert block["missing"]["measure"].startswith("no sample covers the measure phase (0.10 s in all, sampled every")
    assert block["peak"]["host_mem_used"] == 1000  # peaks do not need the window


def test_no_samples_and_switched_off_are_null_with_reasons():
    empty = TelemetryDigest(1.0, ["procfs"]).summary([(0.0, 1.0)])
    assert empty["samples"] == 0 and empty["measure"] is None and empty["peak"] is None
    assert "no sample was taken" in empty["missing"]["measure"]
    off = switched_off("telemetry was switched off (telemetry_period 0)")
    assert off["samples"] == 0 and off["missing"]["peak"] == "telemetry was switched off (telemetry_period 0)"


def test_measure_windows_pair_per_batch_size_and_close_an_unended_phase():
    phases = [
        {"name": "measure", "state": "start", "t": 1.0, "batch_size": 1},
        {"name": "compile", "state": "start", "t": 1.5, "batch_size": 4},
        {"name": "measure", "state": "end", "t": 2.0, "batch_size": 1},
        {"name": "measure", "state": "start", "t": 3.0, "batch_size": 4},  # the worker died measuring
    ]
    assert measure_windows(phases, end_t=9.0) == [(1.0, 2.0), (3.0, 9.0)]
    assert measure_windows([], end_t=9.0) == []


def test_neuron_monitor_listing_no_runtime_while_measuring_is_said():
    """TorchNeuron's processes are not yet documented to show in neuron-monitor: when none shows while the
    run measures, the NeuronCore figures are not the run's, and the telemetry block says so."""
    quiet, busy = TelemetryDigest(1.0, ["neuron-monitor"]), TelemetryDigest(1.0, ["neuron-monitor"])
    for t in (10.0, 11.0, 12.0):
        quiet.add(t, dict(sample(50.0, 50.0), processes=[]))
        busy.add(t, dict(sample(50.0, 50.0), processes=[{"pid": 7, "cores": [0]}]))
    window = [(10.0, 12.0)]
    assert quiet.summary(window)["missing"]["runtime"].startswith("neuron-monitor listed no Neuron runtime")
    assert "runtime" not in busy.summary(window)["missing"]
