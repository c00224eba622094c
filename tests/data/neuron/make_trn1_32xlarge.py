"""Builds neuron-monitor-trn1-32xlarge.jsonl from the recorded trn1.2xlarge reports (see README.md).

    .venv/bin/python tests/data/neuron/make_trn1_32xlarge.py

The shape is that of a trn1.32xlarge (16 devices x 2 NeuronCores) running a 32-worker torchrun job:
32 runtimes, one per NeuronCore, and every runtime lists *every* core of the host under both
``neuroncores_in_use`` and ``neuroncore_memory_usage``, the 31 it does not use at zero.  The
figures of runtime k come from one of the two workers of neuron-monitor-trn1-2xlarge.jsonl (worker
k % 2, on a line chosen by k), moved to core k.  Deterministic: the same input gives the same file.

It also writes ../runs/samples-trn1-32xlarge.jsonl: the steady reports as the agent's sampler sends
them (its own ``map_report`` and ``merge``), for the screenshots, which may not import the agent.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "neuron-monitor-trn1-2xlarge.jsonl"
TARGET = HERE / "neuron-monitor-trn1-32xlarge.jsonl"
SAMPLES = HERE.parent / "runs" / "samples-trn1-32xlarge.jsonl"
DEVICES, CORES_PER_DEVICE = 16, 2
CORES = DEVICES * CORES_PER_DEVICE
VCPUS = 128
FIRST_PID = 7001
HOST_MEMORY_TOTAL = 549755813888  # 512 GiB, the trn1.32xlarge's memory (illustrative, as the README says)
IDLE_COUNTERS = {"neuroncore_utilization": 0, "flops": 0}
IDLE_MEMORY = {"constants": 0, "model_code": 0, "model_shared_scratchpad": 0, "runtime_memory": 0, "tensors": 0}
# Source lines (1-based, the trn1.2xlarge README's timeline): start-up record, compiling, steady training.
STARTUP_LINE, COMPILE_LINE, STEADY_LINES = 1, 10, range(16, 33)
STEADY_REPORTS = 3


def _every_core(own: int, value: dict, idle: dict) -> dict:
    """The runtime's own core's figures under key ``own``, and every other core of the host at zero."""
    return {str(core): (value if core == own else dict(idle)) for core in range(CORES)}


def _runtime(source: dict, core: int) -> dict:
    """A worker's runtime entry, moved to NeuronCore ``core``, listing all 32 cores."""
    entry = copy.deepcopy(source)
    pid = FIRST_PID + core
    entry["pid"], entry["neuron_runtime_tag"] = pid, str(pid)
    report = entry["report"]
    counters = report["neuroncore_counters"]
    (value,) = counters["neuroncores_in_use"].values()
    counters["neuroncores_in_use"] = _every_core(core, value, IDLE_COUNTERS)
    breakdown = report["memory_used"]["neuron_runtime_used_bytes"]["usage_breakdown"]
    (memory,) = breakdown["neuroncore_memory_usage"].values()
    breakdown["neuroncore_memory_usage"] = _every_core(core, memory, IDLE_MEMORY)
    for model in report["memory_used"]["loaded_models"]:
        for subgraph in model["subgraphs"].values():
            subgraph["neuroncore_index"], subgraph["neuron_device_index"] = core, core // CORES_PER_DEVICE
    return entry


def _host(record: dict, runtimes: list) -> None:
    """trn1.32xlarge host figures: 128 vCPUs (the source's 8 repeated), memory for 32 workers."""
    record["instance_info"]["instance_type"] = "trn1.32xlarge"
    info = record["neuron_hardware_info"]
    info["neuron_device_count"], info["neuroncore_per_device_count"] = DEVICES, CORES_PER_DEVICE
    system = record["system_data"]
    memory = system["memory_info"]
    base = memory["memory_used_bytes"] - sum(r["report"]["memory_used"]["neuron_runtime_used_bytes"]["host"]
                                             for r in record["neuron_runtime_data"])
    memory["memory_total_bytes"] = HOST_MEMORY_TOTAL
    memory["memory_used_bytes"] = base + sum(r["report"]["memory_used"]["neuron_runtime_used_bytes"]["host"]
                                             for r in runtimes)
    if "vcpu_usage" in system:
        usage = system["vcpu_usage"]["usage_data"]
        usage_list = [usage[str(i)] for i in range(len(usage))]
        system["vcpu_usage"]["usage_data"] = {str(i): dict(usage_list[i % len(usage_list)]) for i in range(VCPUS)}
        system["vcpu_usage"]["context_switch_count"] *= VCPUS // len(usage_list)
    if "neuron_hw_counters" in system:
        (device,) = system["neuron_hw_counters"]["neuron_devices"]
        system["neuron_hw_counters"]["neuron_devices"] = [dict(device, neuron_device_index=i) for i in range(DEVICES)]


def build(lines: list) -> list:
    records = []
    startup = copy.deepcopy(lines[STARTUP_LINE - 1])
    _host(startup, [])
    records.append(startup)
    steady = list(STEADY_LINES)
    plans = [[COMPILE_LINE] * CORES] + [[steady[(core // 2 + 3 * r) % len(steady)] for core in range(CORES)]
                                         for r in range(STEADY_REPORTS)]
    for plan in plans:
        record = copy.deepcopy(lines[plan[0] - 1])  # system, instance and hardware parts of the first source line
        runtimes = [_runtime(lines[number - 1]["neuron_runtime_data"][core % 2], core)
                    for core, number in enumerate(plan)]
        _host(record, runtimes)
        record["neuron_runtime_data"] = runtimes
        records.append(record)
    return records


def samples(records: list) -> list:
    """The steady reports as ``sample`` events, mapped by the agent's own code (seq and t are re-stamped on replay)."""
    import sys

    sys.path.insert(0, str(HERE.parents[2]))
    from remote_agent.monitor.neuron import map_report
    from remote_agent.monitor.sampler import merge

    out = []
    for seq, record in enumerate(records[2:], 1):
        reading = map_report(record)
        for row in reading["processes"]:
            row["command"] = None  # the agent reads it from /proc/PID/cmdline; these processes never ran
        out.append({"v": 1, "seq": seq, "t": 1795326001.0 + seq, "type": "sample",
                    **merge([("neuron-monitor", reading)], 1.0)})
    return out


def main() -> None:
    lines = [json.loads(line) for line in SOURCE.read_text().splitlines() if line.strip()]
    records = build(lines)
    TARGET.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
    SAMPLES.write_text("".join(json.dumps(s, separators=(",", ":")) + "\n" for s in samples(records)))


if __name__ == "__main__":
    main()
