"""The run summary's telemetry lines, from the Result's telemetry block."""
from __future__ import annotations

from app.cli.text import format_telemetry

CORE = 4157997056  # 3.87 GiB, a trn1 training worker's NeuronCore


def test_neuron_utilisation_and_memory_peaks_read_in_two_lines():
    block = {"measure": {"devices": [
        {"index": 0, "kind": "neuroncore", "util_mean_pct": 88.0, "util_p95_pct": 91.0},
        {"index": 1, "kind": "neuroncore", "util_mean_pct": 80.0, "util_p95_pct": 99.5}]},
        "peak": {"devices": [{"index": 0, "kind": "neuroncore", "mem_used": CORE},
                             {"index": 1, "kind": "neuroncore", "mem_used": CORE}],
                 "device_mem_used": 2 * CORE, "host_mem_used": 9116319744, "host_mem_total": 33117732864,
                 "process_rss": None},
        "missing": {"peak.process_rss": "no sample had this figure"}}
    assert format_telemetry(block) == [
        "  utilisation mean 84.0% while measuring, p95 99.5% (2 NeuronCores; per device 80.0–88.0%)",
        "  peak memory device 7.74 GiB (3.87 GiB on the fullest) · host 8.49 GiB of 30.84 GiB · workload RSS N/A",
    ]


def test_an_unsampled_measure_phase_says_why():
    block = {"measure": None, "peak": None,
             "missing": {"measure": "telemetry was switched off (telemetry_period 0)"}}
    assert format_telemetry(block) == ["  utilisation N/A: telemetry was switched off (telemetry_period 0)"]
    assert format_telemetry(None) == []  # results from before telemetry
