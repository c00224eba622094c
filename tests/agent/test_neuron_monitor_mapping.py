"""neuron-monitor reports -> sample parts, on the recorded reports of tests/data/neuron/ (see its README).

Line numbers are the README's: the trn1.2xlarge training timeline (start-up record, imports, compile at
0 %, first step, steady training) and the inf2.xlarge serving timeline with its two error events.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from remote_agent.monitor.neuron import CORE_MEMORY_FIELDS, NO_EXECUTION, NO_RUNTIME, map_report

NEURON = Path(__file__).resolve().parents[1] / "data" / "neuron"
TRN1 = [json.loads(line) for line in (NEURON / "neuron-monitor-trn1-2xlarge.jsonl").read_text().splitlines()]
INF2 = [json.loads(line) for line in (NEURON / "neuron-monitor-inf2-xlarge.jsonl").read_text().splitlines()]
IDLE = json.loads((NEURON / "neuron-monitor-idle.json").read_text())
# 32 runtimes (one torchrun worker per NeuronCore), each listing all 32 cores, idle ones at 0 (see the README).
TRN1_32 = [json.loads(line) for line in (NEURON / "neuron-monitor-trn1-32xlarge.jsonl").read_text().splitlines()]
GIB = 1024 ** 3
CORE_TOTAL = 16 * GIB  # a 32 GiB device with 2 NeuronCores
HOST_TOTAL = 33117732864


def line(records, number):
    """A deep copy of the README's line ``number`` (1-based), safe to edit."""
    return copy.deepcopy(records[number - 1])


def core(reading, index):
    return next(d for d in reading["devices"] if d["index"] == index)


def test_the_startup_record_lists_idle_cores_and_says_why_cpu_is_missing():
    reading = map_report(line(TRN1, 1))
    assert reading["host"] == {"cpu_pct": None, "cpu_per_core_pct": None, "mem_used": 1297305600,
                               "mem_total": HOST_TOTAL}
    why = "neuron-monitor's report has no system_data.vcpu_usage group"
    assert reading["missing"]["host.cpu_pct"] == why and reading["missing"]["host.cpu_per_core_pct"] == why
    # neuron_hardware_info names both cores; no runtime holds them, so they are idle, not unknown.
    assert reading["devices"] == [
        {"index": 0, "kind": "neuroncore", "device": 0, "util_pct": 0.0, "mem_used": 0, "mem_total": CORE_TOTAL,
         "flops": 0.0},
        {"index": 1, "kind": "neuroncore", "device": 0, "util_pct": 0.0, "mem_used": 0, "mem_total": CORE_TOTAL,
         "flops": 0.0},
    ]
    assert reading["runtime"] is None and reading["missing"]["runtime"] == NO_RUNTIME
    assert reading["processes"] == []
    assert set(reading["missing"]) == {"host.cpu_pct", "host.cpu_per_core_pct", "runtime"}


def test_the_idle_report_reads_every_vcpu_and_no_runtime():
    reading = map_report(IDLE)
    host = reading["host"]
    assert host["cpu_pct"] == pytest.approx(0.74 + 0.39)  # user + system of average_usage
    assert host["cpu_per_core_pct"] == pytest.approx([1.05, 0.71, 0.0, 0.99, 0.1, 0.37, 4.82, 0.98])
    assert (host["mem_used"], host["mem_total"]) == (1301430272, HOST_TOTAL)
    assert [(d["util_pct"], d["mem_used"]) for d in reading["devices"]] == [(0.0, 0), (0.0, 0)]
    assert reading["runtime"] is None and reading["processes"] == []
    assert reading["missing"] == {"runtime": NO_RUNTIME}


@pytest.mark.parametrize("number", range(4, 11))
def test_while_the_graph_compiles_both_cores_sit_at_zero_with_no_latency(number):
    reading = map_report(line(TRN1, number))
    assert [core(reading, i)["util_pct"] for i in (0, 1)] == [0.0, 0.0]
    runtime = reading["runtime"]
    assert runtime["completed"] == 0 and runtime["errors"] == 0
    assert runtime["latency_p50_s"] is None and runtime["latency_p99_s"] is None
    assert reading["missing"]["runtime.latency_p50_s"] == NO_EXECUTION
    assert [p["pid"] for p in reading["processes"]] == [4211, 4212]
    assert [p["cores"] for p in reading["processes"]] == [[0], [1]]


def test_device_memory_grows_per_core_during_compile():
    used = [core(map_report(line(TRN1, n)), 0)["mem_used"] for n in range(4, 11)]
    assert used[0] == 308805632 and used[-1] == 1134559232  # 0.29 -> 1.06 GiB per core
    assert used == sorted(used)


def test_the_first_step_runs_once_per_worker():
    reading = map_report(line(TRN1, 11))
    assert core(reading, 0)["util_pct"] == pytest.approx(7.912846213376501)
    assert core(reading, 1)["util_pct"] == pytest.approx(8.222846213376501)
    assert core(reading, 0)["mem_used"] == core(reading, 1)["mem_used"] == 3854958592
    # completed == 1: every percentile is that one execution, 1.40 s.
    assert reading["runtime"]["completed"] == 2
    assert reading["runtime"]["latency_p50_s"] == reading["runtime"]["latency_p99_s"] == pytest.approx(1.402)


def test_steady_training_merges_two_runtimes_into_one_list_of_cores():
    reading = map_report(line(TRN1, 20))
    assert reading["devices"] == [
        {"index": 0, "kind": "neuroncore", "device": 0, "util_pct": 90.1093099792359, "mem_used": 4157997056,
         "mem_total": CORE_TOTAL, "flops": 10260702328461.0},
        {"index": 1, "kind": "neuroncore", "device": 0, "util_pct": 86.3766576309908, "mem_used": 4157997056,
         "mem_total": CORE_TOTAL, "flops": 9797535330195.0},
    ]
    runtime = reading["runtime"]
    assert runtime["completed"] == 10 and runtime["errors"] == 0
    # Percentiles of two runtimes: p50 weighted by executions, p99 the worse one.
    assert runtime["latency_p50_s"] == pytest.approx((0.175823341879 + 0.178010672483) / 2)
    assert runtime["latency_p99_s"] == pytest.approx(0.210347420959)
    assert reading["host"]["cpu_pct"] == pytest.approx(31.53 + 7.43)
    assert reading["host"]["mem_used"] == 9116319744
    worker = reading["processes"][0]
    assert worker["pid"] == 4211 and worker["host_mem"] == 3049259008 and worker["cpu_pct"] == pytest.approx(45.63)
    assert reading["missing"] == {}


def test_steady_training_utilisation_stays_in_its_documented_band():
    utils = [d["util_pct"] for n in range(16, 33) for d in map_report(line(TRN1, n))["devices"]]
    assert min(utils) == pytest.approx(74.74, abs=0.01) and max(utils) == pytest.approx(90.82, abs=0.01)


@pytest.mark.parametrize("records", [TRN1, INF2], ids=["trn1", "inf2"])
def test_core_memory_is_the_breakdown_sum_and_matches_each_runtimes_device_total(records):
    for number, report in enumerate(records, 1):
        reading = map_report(report)
        for entry in report["neuron_runtime_data"]:
            used = entry["report"]["memory_used"]["neuron_runtime_used_bytes"]
            cores = used["usage_breakdown"]["neuroncore_memory_usage"]
            for key, parts in cores.items():
                assert core(reading, int(key))["mem_used"] == sum(parts[f] for f in CORE_MEMORY_FIELDS), number
            assert sum(core(reading, int(k))["mem_used"] for k in cores) == used["neuron_device"], number
        if number > 1:  # one figure per vCPU: 8 on trn1.2xlarge, 4 on inf2.xlarge
            assert len(reading["host"]["cpu_per_core_pct"]) == (8 if records is TRN1 else 4)


def test_one_inference_process_owns_both_inf2_cores():
    reading = map_report(line(INF2, 6))
    assert [p["cores"] for p in reading["processes"]] == [[0, 1]]
    assert core(reading, 0)["mem_used"] == core(reading, 1)["mem_used"] == 538968064
    assert reading["runtime"]["completed"] == 762
    assert reading["runtime"]["latency_p50_s"] == pytest.approx(0.002629826278)


def test_the_inf2_error_events_are_counted_by_kind():
    errors = {n: map_report(line(INF2, n))["runtime"] for n in range(5, 25)}
    assert errors[14]["errors"] == 1 and errors[14]["errors_by_kind"]["generic"] == 1
    assert errors[19]["errors"] == 1 and errors[19]["errors_by_kind"]["numerical"] == 1
    assert [n for n, runtime in errors.items() if runtime["errors"]] == [14, 19]
    assert map_report(line(INF2, 14))["processes"][0]["errors"] == 1


def test_effective_flops_is_read_like_flops():
    report = line(INF2, 6)
    cores = report["neuron_runtime_data"][0]["report"]["neuroncore_counters"]["neuroncores_in_use"]
    for value in cores.values():
        value["effective_flops"] = value.pop("flops")
    assert core(map_report(report), 0)["flops"] == 32065273929135.0


def test_a_counter_group_with_an_error_nulls_only_that_runtimes_cores():
    report = line(TRN1, 20)
    counters = report["neuron_runtime_data"][1]["report"]["neuroncore_counters"]
    counters["error"] = "failed to read NeuronCore counters"
    reading = map_report(report)
    assert core(reading, 0)["util_pct"] == pytest.approx(90.1093099792359)
    assert core(reading, 1)["util_pct"] is None and core(reading, 1)["flops"] is None
    assert core(reading, 1)["mem_used"] == 4157997056  # memory_used is fine
    assert reading["missing"]["devices.1.util_pct"] == \
        "neuron-monitor could not read neuroncore_counters: failed to read NeuronCore counters"


def test_a_runtime_with_an_error_and_no_groups_leaves_no_core_surely_idle():
    report = line(TRN1, 20)
    report["neuron_runtime_data"][1] = {"pid": 4212, "neuron_runtime_tag": "4212", "error": "runtime gone",
                                        "report": {}}
    reading = map_report(report)
    assert core(reading, 1)["util_pct"] is None and core(reading, 1)["mem_used"] is None
    assert "runtime 4212" in reading["missing"]["devices.1.util_pct"]
    assert "runtime gone" in reading["missing"]["devices.1.util_pct"]
    # execution counts of one runtime would pass for both: none rather than half.
    assert reading["runtime"]["completed"] is None
    assert "runtime gone" in reading["missing"]["runtime.completed"]


def test_missing_memory_group_and_hardware_info_are_null_with_reasons():
    report = line(TRN1, 20)
    del report["neuron_runtime_data"][0]["report"]["memory_used"]
    del report["neuron_hardware_info"]
    reading = map_report(report)
    assert core(reading, 0)["mem_used"] is None
    assert reading["missing"]["devices.0.mem_used"] == "neuron-monitor's report has no runtime 4211.memory_used group"
    assert core(reading, 0)["mem_total"] is None and core(reading, 0)["device"] is None
    assert "neuron_hardware_info" in reading["missing"]["devices.0.mem_total"]
    assert [d["index"] for d in reading["devices"]] == [0, 1]  # the cores runtimes report are still listed


def test_core_keys_are_global_indices_across_devices():
    # A two-device host where the workers hold cores "2" and "3" (on device 1): cores 0-1 are idle.
    report = line(TRN1, 20)
    report["neuron_hardware_info"]["neuron_device_count"] = 2
    for entry, key in zip(report["neuron_runtime_data"], ("2", "3"), strict=True):
        groups = entry["report"]
        for holder in (groups["neuroncore_counters"]["neuroncores_in_use"],
                       groups["memory_used"]["neuron_runtime_used_bytes"]["usage_breakdown"]
                       ["neuroncore_memory_usage"]):
            holder[key] = holder.pop(next(iter(holder)))
    reading = map_report(report)
    assert [(d["index"], d["device"], d["util_pct"]) for d in reading["devices"]] == [
        (0, 0, 0.0), (1, 0, 0.0), (2, 1, pytest.approx(90.1093099792359)), (3, 1, pytest.approx(86.3766576309908))]
    assert [p["cores"] for p in reading["processes"]] == [[2], [3]]


# ----------------------------------------------------------------- many runtimes on one host (trn1.32xlarge)

def _own(report, k):
    """Runtime k's figures for its own core k, as the report states them."""
    entry = report["neuron_runtime_data"][k]["report"]
    counters = entry["neuroncore_counters"]["neuroncores_in_use"][str(k)]
    memory = entry["memory_used"]["neuron_runtime_used_bytes"]["usage_breakdown"]["neuroncore_memory_usage"][str(k)]
    return counters, sum(memory[f] for f in CORE_MEMORY_FIELDS)


@pytest.mark.parametrize("number", [3, 4, 5])
def test_every_core_is_as_busy_as_the_runtime_that_uses_it_says(number):
    report = line(TRN1_32, number)
    for k, entry in enumerate(report["neuron_runtime_data"]):  # the shape: all 32 cores in each, others at 0
        in_use = entry["report"]["neuroncore_counters"]["neuroncores_in_use"]
        assert sorted(in_use, key=int) == [str(c) for c in range(32)]
        assert all(v["neuroncore_utilization"] == 0 for c, v in in_use.items() if c != str(k))
    reading = map_report(report)
    assert [d["index"] for d in reading["devices"]] == list(range(32))
    for k in range(32):
        counters, memory = _own(report, k)
        device = core(reading, k)
        assert device["util_pct"] == pytest.approx(counters["neuroncore_utilization"]) and device["util_pct"] > 70
        assert device["flops"] == pytest.approx(counters["flops"])
        assert device["mem_used"] == memory == 4157997056  # 3.87 GiB, not the 0 of the 31 others
        assert device["device"] == k // 2 and device["mem_total"] == CORE_TOTAL
    assert reading["missing"] == {}


def test_each_of_the_32_processes_is_listed_with_its_own_core_only():
    reading = map_report(line(TRN1_32, 4))
    assert [(p["pid"], p["cores"]) for p in reading["processes"]] == [(7001 + k, [k]) for k in range(32)]
    assert reading["runtime"]["completed"] == sum(
        e["report"]["execution_stats"]["execution_summary"]["completed"] for e in TRN1_32[3]["neuron_runtime_data"])


def test_while_32_workers_compile_each_core_holds_its_workers_memory_at_zero_utilisation():
    reading = map_report(line(TRN1_32, 2))
    assert [d["util_pct"] for d in reading["devices"]] == [0.0] * 32
    assert [d["mem_used"] for d in reading["devices"]] == [1134559232] * 32  # 1.06 GiB each, from its own runtime
    assert [p["cores"] for p in reading["processes"]] == [[k] for k in range(32)]


def test_a_core_no_runtime_uses_is_idle_even_when_every_runtime_lists_it():
    report = line(TRN1_32, 4)
    del report["neuron_runtime_data"][5]  # worker 5 has ended: the others still list core 5, at 0
    reading = map_report(report)
    assert (core(reading, 5)["util_pct"], core(reading, 5)["mem_used"]) == (0.0, 0)
    assert core(reading, 6)["util_pct"] > 70 and "devices.5.util_pct" not in reading["missing"]


def test_a_runtime_whose_counters_fail_leaves_only_its_own_core_unknown():
    report = line(TRN1_32, 4)
    report["neuron_runtime_data"][7]["report"]["neuroncore_counters"]["error"] = "failed to read NeuronCore counters"
    reading = map_report(report)
    assert core(reading, 7)["util_pct"] is None and core(reading, 7)["mem_used"] == 4157997056
    assert reading["missing"]["devices.7.util_pct"] == \
        "neuron-monitor could not read neuroncore_counters: failed to read NeuronCore counters"
    assert all(core(reading, k)["util_pct"] > 70 for k in range(32) if k != 7)
    assert [p["cores"] for p in reading["processes"]][7] == [7]  # its memory still says which core it holds


def test_a_runtime_gone_blind_leaves_the_cores_nobody_claims_unknown():
    report = line(TRN1_32, 4)
    report["neuron_runtime_data"][9] = {"pid": 7010, "neuron_runtime_tag": "7010", "error": "runtime gone",
                                        "report": {}}
    reading = map_report(report)
    assert core(reading, 9)["util_pct"] is None and "runtime gone" in reading["missing"]["devices.9.util_pct"]
    assert core(reading, 8)["util_pct"] > 70 and core(reading, 10)["util_pct"] > 70
