"""How a training run scales with machines: throughput, speed-up and weak-scaling efficiency per node count.

Runs of one setup (same model, precision, per-process batch, processes per node,
per-node instance type) on 1, 2, ... N nodes.  Data-parallel training with a fixed
per-process batch is weak scaling: ideal throughput grows with N, so

    speed-up_N   = throughput_N / throughput_1
    efficiency_N = throughput_N / (N x throughput_1)

with 95% intervals carried through from the throughputs' intervals (between runs
when a node count was repeated, else from the run's own step times: the mean step's
interval, since throughput is samples over wall time), and the
dollars per million samples at each node count (N machines' hourly price).
When no 1-node run is among them, the smallest node count is the base.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def _ratio_interval(num: Sequence[float] | None, den: Sequence[float] | None, scale: float) -> list[float] | None:
    """[lo, hi] of num / den / scale for positive intervals (the widest the two allow)."""
    if not num or not den or min(den) <= 0:
        return None
    return [num[0] / den[1] / scale, num[1] / den[0] / scale]


def scaling_rows(groups: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (setup, node count) where a setup was measured on more than one node count."""
    setups: dict[tuple, list[dict[str, Any]]] = {}
    for group in groups:
        if group.get("workload") != "train" or group.get("throughput") is None:
            continue
        key = (group["model"], group["batch_size"], group.get("nproc", 1), group.get("family"))
        setups.setdefault(key, []).append(group)
    rows = []
    for (model, batch, nproc, family), members in setups.items():
        counts = sorted({g.get("nodes", 1) for g in members})
        if len(counts) < 2:
            continue
        by_nodes = {g.get("nodes", 1): g for g in members}
        base_n = counts[0]
        base = by_nodes[base_n]
        for n in counts:
            group = by_nodes[n]
            factor = n / base_n
            speedup = group["throughput"] / base["throughput"]
            speedup_ci = _ratio_interval(group.get("scaling_ci95"), base.get("scaling_ci95"), 1.0)
            rows.append({
                "model": model, "batch_size": batch, "nproc": nproc, "family": family, "label": group["label"],
                "nodes": n, "base_nodes": base_n, "world_size": n * nproc,
                "throughput": group["throughput"], "throughput_ci95": group.get("scaling_ci95"),
                "speedup": speedup, "speedup_ci95": speedup_ci,
                "efficiency": speedup / factor,
                "efficiency_ci95": None if speedup_ci is None else [speedup_ci[0] / factor, speedup_ci[1] / factor],
                "usd_per_hour": group.get("usd_per_hour"), "usd_per_1m": group.get("usd_per_1m"),
                "interval_from": "repeats" if group.get("ci95") else "steps",
                "run_ids": group.get("run_ids", []),
            })
    rows.sort(key=lambda r: (r["model"], r["family"] or "", r["nodes"]))
    return rows
