"""Down-sampling ``sample`` events (DESIGN.md §3) into compact time buckets, and reading them back.

A sampler emits one event a second or so, each with per-core arrays and
``missing`` reasons; the run store keeps every raw event *and* one bucket row per
``bucket_s`` seconds with the figures charts need: mean utilisation, peak memory,
the newest runtime counters.  A metric that was never read stays ``None`` (a
bucket never turns "missing" into 0).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

DEFAULT_BUCKET_S = 2.0
Row = dict[str, Any]


def _mean(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def _max(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return max(got) if got else None


def _last(values: Sequence[Any]) -> Any:
    for value in reversed(values):
        if value is not None:
            return value
    return None


def bucket_start(t: float, bucket_s: float = DEFAULT_BUCKET_S) -> float:
    """Buckets are aligned to absolute time, so a resumed recording continues the same buckets."""
    return math.floor(t / bucket_s) * bucket_s


def summarize_samples(samples: Sequence[dict[str, Any]], t: float) -> Row:
    """One bucket row from the sample events that fell in it (in arrival order)."""
    hosts = [s.get("host") or {} for s in samples]
    runtimes = [s.get("runtime") or {} for s in samples]
    processes = [s.get("process") or {} for s in samples]
    by_device: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for sample in samples:
        for device in sample.get("devices") or []:
            index = device.get("index")
            by_device.setdefault((device.get("kind") or "?", index if isinstance(index, int) else -1),
                                 []).append(device)
    devices = []
    for (kind, index), readings in sorted(by_device.items(), key=lambda item: (item[0][0], item[0][1])):
        devices.append({
            "kind": kind, "index": index,
            "util_pct": _mean(d.get("util_pct") for d in readings),
            "mem_used": _max(d.get("mem_used") for d in readings),
            "mem_total": _last([d.get("mem_total") for d in readings]),
            "power_w": _mean(d.get("power_w") for d in readings),
            "flops": _mean(d.get("flops") for d in readings),
        })
    missing: dict[str, str] = {}
    for sample in samples:
        missing.update(sample.get("missing") or {})
    return {
        "t": t,
        "n": len(samples),
        "source": _last([s.get("source") for s in samples]),
        "host": {"cpu_pct": _mean(h.get("cpu_pct") for h in hosts),
                 "mem_used": _max(h.get("mem_used") for h in hosts),
                 "mem_total": _last([h.get("mem_total") for h in hosts])},
        "devices": devices,
        "runtime": {"completed": _last([r.get("completed") for r in runtimes]),
                    "errors": _last([r.get("errors") for r in runtimes]),
                    "latency_p50_s": _mean(r.get("latency_p50_s") for r in runtimes),
                    "latency_p99_s": _max(r.get("latency_p99_s") for r in runtimes)},
        "process": {"cpu_pct": _mean(p.get("cpu_pct") for p in processes),
                    "rss": _max(p.get("rss") for p in processes)},
        "missing": missing,
    }


class Bucketer:
    """Feeds sample events in arrival order; each feed returns the (updated) row of its bucket.

    The caller writes that row over the bucket's previous one, so what is stored
    always covers every sample received: a crash loses at most nothing.
    """

    def __init__(self, bucket_s: float = DEFAULT_BUCKET_S) -> None:
        self.bucket_s = bucket_s
        self._start: float | None = None
        self._samples: list[dict[str, Any]] = []

    def feed(self, sample: dict[str, Any]) -> Row:
        start = bucket_start(float(sample.get("t") or 0.0), self.bucket_s)
        if start != self._start:
            self._start, self._samples = start, []
        self._samples.append(sample)
        return summarize_samples(self._samples, start)


def downsample(samples: Iterable[dict[str, Any]], bucket_s: float = DEFAULT_BUCKET_S) -> list[Row]:
    """All bucket rows for a sequence of sample events (rebuilding a run's telemetry from its events)."""
    rows: dict[float, Row] = {}
    bucketer = Bucketer(bucket_s)
    for sample in samples:
        row = bucketer.feed(sample)
        rows[row["t"]] = row
    return [rows[t] for t in sorted(rows)]


def utilisation_series(rows: Sequence[Row], t0: float | None = None) -> dict[str, list[tuple[float, float]]]:
    """(seconds since ``t0``, percent) series for charts: mean accelerator utilisation and host CPU.

    Accelerators are NeuronCores or GPUs; a host without either gets only the CPU line.
    Points whose value is missing are left out (a gap, not a 0).
    """
    if not rows:
        return {}
    t0 = rows[0]["t"] if t0 is None else t0
    series: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        accel = [d.get("util_pct") for d in row.get("devices") or [] if d.get("kind") in ("neuroncore", "gpu")]
        kinds = {d.get("kind") for d in row.get("devices") or [] if d.get("kind") in ("neuroncore", "gpu")}
        mean = _mean(accel)
        if mean is not None:
            label = "NeuronCore util" if kinds == {"neuroncore"} else "GPU util" if kinds == {"gpu"} \
                else "accelerator util"
            series.setdefault(label, []).append((row["t"] - t0, mean))
        cpu = (row.get("host") or {}).get("cpu_pct")
        if cpu is not None:
            series.setdefault("host CPU", []).append((row["t"] - t0, cpu))
    return series
