"""The ``neuronbench monitor`` screen: a pure function of the newest ``sample`` event.

Laid out after neuron-top: NeuronCore (or GPU, or CPU) utilisation bars with
each core's device memory, host vCPU and memory, and the processes using the
NeuronCores.  A figure the agent could not read shows as "N/A", never as 0.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from app.core.clock_text import local_time_text

FULL, EMPTY = "█", "░"
KIB = 1024
NA = "N/A"


def bar(pct: float | None, width: int) -> str:
    """A ``width``-cell bar filled to ``pct`` percent; blank cells when the figure is missing."""
    if pct is None:
        return " " * width
    filled = int(round(max(0.0, min(100.0, pct)) / 100.0 * width))
    return FULL * filled + EMPTY * (width - filled)


def pct_text(pct: float | None) -> str:
    return f"{pct:5.1f}%" if pct is not None else f"{NA:>6}"


def size_text(count: int | None) -> str:
    """Bytes as the nearest binary unit: ``3.87 GiB``, ``512.0 MiB``."""
    if count is None:
        return NA
    value, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < KIB or unit == "TiB":
            break
        value /= KIB
    return f"{int(value)} B" if unit == "B" else f"{value:.2f} {unit}"


def _share(used: int | None, total: int | None) -> float | None:
    return 100.0 * used / total if used is not None and total else None


def _mem_text(used: int | None, total: int | None) -> str:
    return f"{size_text(used)} / {size_text(total)}"


def _latency_text(seconds: float | None) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds is not None else NA


def _label(device: dict[str, Any]) -> str:
    kind, index = device.get("kind"), _int_text(device.get("index"))  # a device the sampler could not number: N/A
    if kind == "neuroncore":
        return f"ND{device['device']} NC{index}" if device.get("device") is not None else f"NC{index}"
    return f"GPU{index}" if kind == "gpu" else f"CPU{'s' if device.get('index') == 0 else index}"


def _device_lines(devices: Sequence[dict[str, Any]], width: int) -> list[str]:
    if not devices:
        return []
    kinds = {d.get("kind") for d in devices}
    title = {"neuroncore": "NeuronCore", "gpu": "GPU", "cpu": "CPU (no accelerator)"}
    known = [d["util_pct"] for d in devices if d.get("util_pct") is not None]
    average = f" (avg {sum(known) / len(known):.1f}%)" if known and len(devices) > 1 else ""
    lines = [" / ".join(title.get(k, str(k)) for k in sorted(kinds, key=str)) + f" utilisation{average}"]
    cells = max(10, width - 72)
    for device in devices:
        extra = ""
        if device.get("flops") is not None:
            extra = f"  {device['flops'] / 1e12:6.2f} TFLOPS"
        elif device.get("kind") == "gpu":
            power = device.get("power_w")
            temp = device.get("temp_c")
            extra = f"  {f'{power:.0f} W' if power is not None else NA + ' W':>6}" \
                    f"  {f'{temp:.0f} C' if temp is not None else NA + ' C':>5}"
        lines.append(f" {_label(device):<9} {bar(device.get('util_pct'), cells)} {pct_text(device.get('util_pct'))}"
                     f"  mem {_mem_text(device.get('mem_used'), device.get('mem_total')):<21}{extra}")
    # Per Neuron device as well: neuron-top's sum alone misled comparisons (DESIGN.md §6), so it comes second.
    by_device: dict[int, list[dict[str, Any]]] = {}
    for device in devices:
        if device.get("kind") == "neuroncore" and device.get("device") is not None:
            by_device.setdefault(device["device"], []).append(device)
    for index, cores in sorted(by_device.items()):
        used = [c.get("mem_used") for c in cores]
        total = [c.get("mem_total") for c in cores]
        memory = _mem_text(sum(used) if None not in used else None, sum(total) if None not in total else None)
        lines.append(f" ND{index} device memory {memory} ({len(cores)} cores)")
    return lines


def _host_lines(host: dict[str, Any], width: int) -> list[str]:
    cells = max(10, width - 40)
    lines = ["Host",
             f" vCPU    {bar(host.get('cpu_pct'), cells)} {pct_text(host.get('cpu_pct'))}",
             f" memory  {bar(_share(host.get('mem_used'), host.get('mem_total')), cells)} "
             f"{pct_text(_share(host.get('mem_used'), host.get('mem_total')))}  "
             f"{_mem_text(host.get('mem_used'), host.get('mem_total'))}"]
    per_core = host.get("cpu_per_core_pct")
    if per_core:
        cell = 18
        per_row = max(1, (width - 1) // cell)
        for start in range(0, len(per_core), per_row):
            lines.append(" " + "".join(f"{i:>4} {bar(p, 6)} {pct_text(p)}".ljust(cell)
                                       for i, p in enumerate(per_core[start:start + per_row], start)).rstrip())
    return lines


def _runtime_lines(sample: dict[str, Any]) -> list[str]:
    lines = []
    runtime = sample.get("runtime")
    if runtime:
        errors = runtime.get("errors")
        kinds = ", ".join(f"{k} {v}" for k, v in (runtime.get("errors_by_kind") or {}).items() if v)
        lines.append(f"Neuron runtime  {runtime.get('completed', NA) if runtime.get('completed') is not None else NA}"
                     f" executions, errors {errors if errors is not None else NA}{f' ({kinds})' if kinds else ''}, "
                     f"p50 {_latency_text(runtime.get('latency_p50_s'))}, "
                     f"p99 {_latency_text(runtime.get('latency_p99_s'))}")
    processes = sample.get("processes")
    if processes:
        lines.append("Processes using NeuronCores")
        lines.append(f" {'pid':>7}  {'cores':<9} {'done':>6} {'errors':>6} {'p50':>10} {'host mem':>10} "
                     f"{'vCPU':>6}  command")
        for row in processes:
            cores = ",".join(str(c) for c in row.get("cores") or []) or NA
            cpu = f"{row['cpu_pct']:5.1f}%" if row.get("cpu_pct") is not None else NA
            lines.append(f" {row.get('pid')!s:>7}  {cores:<9} {_int_text(row.get('completed')):>6} "
                         f"{_int_text(row.get('errors')):>6} {_latency_text(row.get('latency_p50_s')):>10} "
                         f"{size_text(row.get('host_mem')):>10} {cpu:>6}  {row.get('command') or NA}")
    elif sample.get("runtime") is None and "neuron-monitor" in (sample.get("sources") or []):
        lines.append("Processes using NeuronCores: none")
    process = sample.get("process")
    if process:
        lines.append(f"Workload  CPU {pct_text(process.get('cpu_pct')).strip()} of the host, "
                     f"RSS {size_text(process.get('rss'))}, {process.get('pids', NA)} process(es)")
    return lines


def _seconds_text(value: float | None) -> str:
    return NA if value is None else f"{value:g} s"


def _int_text(value: int | None) -> str:
    return NA if value is None else str(value)


def render(sample: dict[str, Any], host: str, width: int = 100) -> list[str]:
    """The screen for one ``sample`` event, as lines of at most about ``width`` characters."""
    stamp = local_time_text(sample.get("t"), "%H:%M:%S")
    sources = ", ".join(sample.get("sources") or [sample.get("source") or "?"])
    lines = [f"neuronbench monitor · {host} · {stamp} · every {_seconds_text(sample.get('period_s'))} · {sources}", ""]
    lines += _device_lines(sample.get("devices") or [], width)
    lines.append("")
    lines += _host_lines(sample.get("host") or {}, width)
    extra = _runtime_lines(sample)
    if extra:
        lines += [""] + extra
    missing = sample.get("missing") or {}
    if missing:
        lines += ["", "N/A because:"]
        lines += [f" {key}: {why}" for key, why in sorted(missing.items())]
    return lines
