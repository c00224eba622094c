"""Telemetry ``sample`` events of a CPU-only host of any size, for screenshots and ``bench/ui_lag.py``.

No machine here has 192 vCPUs, so these stand in for one: the shape is exactly
what the agent's /proc source and ``merge`` send for a host without NeuronCores
or GPUs (DESIGN.md §3: the CPU is the one ``cpu`` device, per-vCPU shares in
``host.cpu_per_core_pct``, rounded as the agent rounds them), the figures a
plausible training on it: torch's intra-op threads keep some vCPUs busy, data
loader workers a few more, the rest idle.  Seeded, so every render is the same.
"""
from __future__ import annotations

import random
from typing import Any

GIB = 1024 ** 3
RUNTIME_MISSING = "neuron-monitor is not installed on this host (/opt/aws/neuron/bin or PATH)"


def cpu_host_sample(vcpu_pct: list[float], mem_used: int, mem_total: int, t: float = 0.0) -> dict[str, Any]:
    """One sample event of a CPU-only host whose vCPUs were ``vcpu_pct`` busy over the last period."""
    shares = [round(p, 1) for p in vcpu_pct]
    cpu = sum(vcpu_pct) / len(vcpu_pct) if vcpu_pct else None
    return {"v": 1, "seq": 0, "t": t, "type": "sample", "source": "procfs", "sources": ["procfs"], "period_s": 1.0,
            "host": {"cpu_pct": cpu, "cpu_per_core_pct": shares, "mem_used": mem_used, "mem_total": mem_total},
            "devices": [{"index": 0, "kind": "cpu", "util_pct": cpu, "mem_used": mem_used, "mem_total": mem_total}],
            "runtime": None, "process": None, "missing": {"runtime": RUNTIME_MISSING}}


def cpu_host_samples(vcpus: int, count: int, mem_total: int | None = None, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` consecutive samples of a ``vcpus``-vCPU host training a model.

    Half the vCPUs run torch's threads (80-100 % busy), one in sixteen a loader worker
    (30-60 %), the rest stay near idle; memory (4 GiB per vCPU unless ``mem_total``)
    climbs slowly while the run allocates.
    """
    rng = random.Random(seed)
    total = mem_total if mem_total is not None else 4 * GIB * vcpus
    threads = max(1, vcpus // 2)
    loaders = set(range(threads, vcpus, 16))
    samples = []
    for k in range(count):
        shares = [rng.uniform(80.0, 100.0) if i < threads else rng.uniform(30.0, 60.0) if i in loaders
                  else rng.uniform(0.0, 4.0) for i in range(vcpus)]
        used = int(total * (0.18 + 0.12 * min(1.0, k / max(count - 1, 1))))
        samples.append(cpu_host_sample(shares, used, total, float(k)))
    return samples
