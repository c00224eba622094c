"""GPU telemetry from ``nvidia-smi --query-gpu=... --format=csv,noheader,nounits -lms PERIOD``.

nvidia-smi prints one CSV row per GPU every period until it is stopped; the
newest row of each GPU is its reading.  NVML through ctypes would save the
process, but nvidia-smi is what every NVIDIA host has and what users check
figures against.
"""
from __future__ import annotations

import csv
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from remote_agent.monitor.toolstream import ToolStream
from remote_agent.probe.nvidia import field_text

SOURCE = "nvidia-smi"
# (query field, sample key); memory comes in MiB with nounits.
FIELDS = (("utilization.gpu", "util_pct"), ("memory.used", "mem_used"), ("memory.total", "mem_total"),
          ("power.draw", "power_w"), ("temperature.gpu", "temp_c"), ("clocks.sm", "sm_clock_mhz"))
QUERY = ",".join(["index"] + [name for name, _ in FIELDS])
_MIB = 1024 * 1024

Reading = Dict[str, Any]


def _float(text: Optional[str]) -> Optional[float]:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def parse_row(line: str) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """One GPU's row of the streaming query.

    Args:
        line: ``index, utilization.gpu, memory.used, memory.total, power.draw, temperature.gpu,
            clocks.sm`` without units.

    Returns:
        (device, missing): the ``sample`` device entry (memory in bytes), and a reason for
        each field nvidia-smi could not read (it prints ``[N/A]`` or ``[Not Supported]``).

    Raises:
        ValueError: the line is not a row of this query.
    """
    row = next(csv.reader([line], skipinitialspace=True), [])
    if len(row) != len(FIELDS) + 1:
        raise ValueError("%d fields, expected %d (%s)" % (len(row), len(FIELDS) + 1, QUERY))
    index = _float(field_text(row[0]))
    if index is None or index != int(index):
        raise ValueError("GPU index %r is not a number" % row[0].strip()[:40])
    device = {"index": int(index), "kind": "gpu"}  # type: Dict[str, Any]
    missing = {}  # type: Dict[str, str]
    for (name, key), raw in zip(FIELDS, row[1:]):
        value = _float(field_text(raw))
        if value is not None and key in ("mem_used", "mem_total"):
            value = int(value * _MIB)
        device[key] = value
        if value is None:
            missing["devices.%d.%s" % (device["index"], key)] = "nvidia-smi reports %s for %s" % (
                raw.strip() or "nothing", name)
    return device, missing


class NvidiaSmiSource:
    """Runs nvidia-smi's loop mode and keeps each GPU's newest row."""

    name = SOURCE

    def __init__(self, path: str, period_s: float) -> None:
        self.period_s = period_s
        self._lock = threading.Lock()
        self._rows = {}  # type: Dict[int, Tuple[Dict[str, Any], Dict[str, str]]]
        self._latest_at = 0.0
        self._bad_lines = 0
        argv = [path, "--query-gpu=" + QUERY, "--format=csv,noheader,nounits",
                "-lms", str(max(1, int(round(period_s * 1000))))]
        self.stream = ToolStream(SOURCE, argv, self._on_line)

    def start(self) -> None:
        self.stream.start()

    def pids(self) -> List[int]:
        return self.stream.pids()

    def _on_line(self, line: bytes) -> bool:
        try:
            device, missing = parse_row(line.decode("utf-8", "replace"))
        except ValueError:
            with self._lock:
                self._bad_lines += 1
            return False
        with self._lock:
            self._rows[device["index"]] = (device, missing)
            self._latest_at = time.monotonic()
        return True

    def read(self) -> Reading:
        with self._lock:
            rows = [self._rows[i] for i in sorted(self._rows)]
            age, bad = time.monotonic() - self._latest_at, self._bad_lines
        if rows and age <= 3 * self.period_s + 2.0:
            missing = {}  # type: Dict[str, str]
            for _, gaps in rows:
                missing.update(gaps)
            return {"devices": [dict(device) for device, _ in rows], "missing": missing}
        why = self.stream.exit_reason()
        if why is None:
            if rows:
                why = "nvidia-smi has printed no row for %.0f s" % age
            elif bad:
                why = "nvidia-smi printed %d line(s) that are not rows of the query" % bad
            else:
                why = "waiting for nvidia-smi's first rows"
        return {"devices": [], "missing": {"devices": why}}

    def stop(self) -> None:
        self.stream.stop()
