"""Protocol-v1 event streams built the way the agent builds them (``make_event``), for store tests.

Sample events follow DESIGN.md §3 / COMMON.md: an inf2.xlarge host with two
NeuronCores as neuron-monitor would describe it (tests/data/neuron has the raw
reports), with the host's GPU figure missing and a reason given.
"""
from __future__ import annotations

from typing import Any

from remote_agent.protocol import make_event

GIB = 1024 ** 3
T0 = 1_795_000_000.0

ENV = {"hostname": "ip-10-0-0-1", "instance_type": "inf2.xlarge", "region": "us-east-1",
       "python": {"version": "3.10.12"}, "torch": "2.9.0", "torch_xla": "2.9.0", "torch_neuronx": "2.9.0.2.11",
       "neuronx_cc": "2.21.18209.0", "timm": "1.0.31", "cpu": {"model": "AMD EPYC 7R13", "count": 4},
       "devices": [{"kind": "neuron", "index": 0, "cores": 2, "memory_bytes": 32 * GIB}],
       "neuron_sdk": {"tools_version": "2.27.0", "runtime_version": "2.29.40.0"}, "warnings": [], "missing": {}}


def sample(seq: int, t: float, util: tuple[float | None, ...] = (50.0, 60.0),
           cpu: float | None = 30.0, mem_used: int = 3 * GIB, completed: int | None = None,
           kind: str = "neuroncore") -> dict[str, Any]:
    """A sample event; ``kind="gpu"`` makes it nvidia-smi's (with power), else neuron-monitor's."""
    gpu = kind == "gpu"
    devices = [{"index": i, "kind": kind, "util_pct": u, "mem_used": mem_used // 2 + i * 1024,
                "mem_total": (24 if gpu else 16) * GIB, "flops": None, "power_w": 180.0 if gpu else None}
               for i, u in enumerate(util)]
    missing = {} if gpu else {"devices.power_w": "neuron-monitor reports no power on inf2"}
    if any(u is None for u in util):
        missing["devices.util_pct"] = "neuroncore_counters group carried an error"
    return make_event("sample", seq, t, source="nvidia-smi" if gpu else "neuron-monitor", period_s=1.0,
                      host={"cpu_pct": cpu, "cpu_per_core_pct": [cpu, cpu] if cpu is not None else None,
                            "mem_used": 6 * GIB, "mem_total": 16 * GIB},
                      devices=devices,
                      runtime={"completed": completed, "errors": 0, "latency_p50_s": 0.004, "latency_p99_s": 0.006},
                      process={"cpu_pct": 95.0, "rss": 900 * 1024 * 1024}, missing=missing)


def train_stream(run_id: str, steps: int = 6, samples_every: int = 1, t0: float = T0) -> list[dict[str, Any]]:
    """hello, probe, phases, steps with a sample after each, result, end: a whole ok training run."""
    seq = 0

    def ev(type_: str, t: float, **payload: Any) -> dict[str, Any]:
        nonlocal seq
        seq += 1
        return make_event(type_, seq, t, **payload)

    events = [ev("hello", t0, agent_version="0.1.0", protocol_version=1, pid=4242, python="3.10.12", run_id=run_id),
              ev("probe", t0 + 0.1, env=ENV), ev("phase", t0 + 0.2, name="measure", state="start")]
    for i in range(1, steps + 1):
        t = t0 + i * 0.5
        events.append(ev("step", t, i=i, dt_s=0.5, samples=32, compiled=i == 1))
        if i % samples_every == 0:
            seq += 1
            events.append(sample(seq, t + 0.01, util=(40.0 + i, 60.0 + i)))
    result = {"schema": "neuronbench.result/1", "run_id": run_id, "host": None, "workload": "train", "status": "ok",
              "spec": {"workload": "train", "model": "vit_tiny_patch16_224", "batch_sizes": [32]}, "env": ENV,
              "train": {"throughput_samples_per_s": 64.0, "compile": {"seconds": 0.5, "steps": [1]}},
              "infer": None, "cost": None, "warnings": []}
    end_t = t0 + steps * 0.5 + 1
    events += [ev("result", end_t, result=result), ev("end", end_t + 0.01, status="ok")]
    return events


def run_stream(result: dict[str, Any], env: dict[str, Any], t0: float = T0, samples: int = 0,
               util: float = 70.0, logs: tuple[str, ...] = (), kind: str = "neuroncore") -> list[dict[str, Any]]:
    """A finished run's events around a given Result: hello, probe, logs, ``samples`` samples, result, end."""
    seq = 0

    def ev(type_: str, t: float, **payload: Any) -> dict[str, Any]:
        nonlocal seq
        seq += 1
        return make_event(type_, seq, t, **payload)

    events = [ev("hello", t0, agent_version="0.1.0", protocol_version=1, pid=4242, python="3.10.12",
                 run_id=result["run_id"]), ev("probe", t0 + 0.1, env=env)]
    events += [ev("log", t0 + 0.2, level="stderr", message=line) for line in logs]
    phase = int(t0) % 7
    for i in range(samples):
        wobble = 6.0 * (((i + phase) * 7919) % 11 - 5) / 5.0  # deterministic jitter, different per run
        ramp = min(1.0, i / 5.0)  # compile/warm-up at the start: utilisation climbs
        seq += 1
        cores = (util * ramp + wobble * ramp,) if kind == "gpu" else \
            (util * ramp + wobble * ramp, util * ramp - 0.5 * wobble * ramp)
        events.append(sample(seq, t0 + 1.0 + i, util=cores, cpu=25.0 + wobble, completed=100 * i, kind=kind))
    end = t0 + 2.0 + samples
    events += [ev("result", end, result=result), ev("end", end + 0.01, status=result["status"])]
    return events
