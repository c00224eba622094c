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


def test_the_utilisation_is_the_runs_own_cores_not_another_processs():
    block = {"measure": {"run_cores": [0], "other_processes": [{"pid": 4212, "cores": [1]}], "devices": [
        {"index": 0, "kind": "neuroncore", "util_mean_pct": 40.0, "util_p95_pct": 45.0, "held_by": "run"},
        {"index": 1, "kind": "neuroncore", "util_mean_pct": 90.0, "util_p95_pct": 95.0, "held_by": "other"}]}}
    assert format_telemetry(block)[0] == ("  utilisation mean 40.0% while measuring, p95 45.0% (1 NeuronCore; "
                                          "not counted: pid 4212 on core 1)")


def test_a_cpu_hosts_utilisation_is_its_vcpus_together_not_one_cpu():
    block = {"measure": {"devices": [{"index": 0, "kind": "cpu", "util_mean_pct": 62.6, "util_p95_pct": 70.0}]}}
    assert format_telemetry(block)[0] == \
        "  utilisation mean 62.6% while measuring, p95 70.0% (the host's vCPUs together)"


def test_an_unsampled_measure_phase_says_why():
    block = {"measure": None, "peak": None,
             "missing": {"measure": "telemetry was switched off (telemetry_period 0)"}}
    assert format_telemetry(block) == ["  utilisation N/A: telemetry was switched off (telemetry_period 0)"]
    assert format_telemetry(None) == []  # results from before telemetry


def _recorded_result(name: str) -> dict:
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "runs" / name
    return next(json.loads(line)["result"] for line in path.read_text().splitlines() if '"type":"result"' in line)


def test_the_summary_keeps_compiled_steps_apart_and_names_the_nodes_of_a_multi_node_run():
    from app.cli.text import format_result

    result = _recorded_result("train-xla-tiny.events.jsonl")
    text = format_result(result)
    assert "compile     " in text and "graph(s) in step(s) 1, 2; excluded from the figures" in text
    assert "nodes" not in text
    cluster = dict(result, host="trn-a,trn-b", nodes=[
        {"index": 0, "host": "trn-a", "ranks": [0, 1], "status": "ok", "env": {"instance_type": "trn1.32xlarge"}},
        {"index": 1, "host": "trn-b", "ranks": [2, 3], "status": "failed", "env": None,
         "telemetry": {"measure": None, "peak": None, "missing": {"measure": "the run stopped before sampling"}}}])
    text = format_result(cluster)
    assert "graph(s) in step(s) 1, 2; excluded from the figures" in text
    assert "  nodes       2: trn-a (ranks 0–1, trn1.32xlarge), trn-b (ranks 2–3, failed)" in text
    assert "  trn-b (node 1):\n    utilisation N/A: the run stopped before sampling" in text
