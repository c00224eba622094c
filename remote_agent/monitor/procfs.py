"""Host CPU (total and per vCPU) and memory, and the workload's process tree, read from /proc.

Every host has these, so the sampler always runs this source: on a CPU-only
host it is the device too.  CPU figures are shares of the time between two
readings, so the first reading after ``start`` covers the first period.
"""
from __future__ import annotations

import os
import time
from typing import Callable, Dict, Iterable, List, Optional, Set, Tuple

SOURCE = "procfs"
PROC = "/proc"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# /proc/stat columns: user nice system idle iowait irq softirq steal (guest time is inside user).
_BUSY_COLUMNS = (0, 1, 2, 5, 6)
_COLUMNS = 8

CpuTimes = Tuple[int, int]  # (busy ticks, all ticks)
ProcStat = Tuple[int, int, int, int]  # (ppid, cpu ticks, start time, rss pages)


def parse_cpu_times(text: str) -> Tuple[Optional[CpuTimes], List[CpuTimes]]:
    """(all vCPUs, per vCPU in order) busy/total ticks from the text of /proc/stat."""
    total = None  # type: Optional[CpuTimes]
    per_core = []  # type: List[Tuple[int, CpuTimes]]
    for line in text.splitlines():
        if not line.startswith("cpu"):
            continue
        name, *columns = line.split()
        ticks = [int(c) for c in columns[:_COLUMNS]]
        times = (sum(ticks[i] for i in _BUSY_COLUMNS if i < len(ticks)), sum(ticks))
        if name == "cpu":
            total = times
        elif name[3:].isdigit():
            per_core.append((int(name[3:]), times))
    return total, [times for _, times in sorted(per_core)]


def busy_pct(before: CpuTimes, after: CpuTimes) -> Optional[float]:
    """Share of the ticks between two readings that were busy, 0-100; None if no tick passed."""
    busy, total = after[0] - before[0], after[1] - before[1]
    if total <= 0:
        return None
    return max(0.0, min(100.0, 100.0 * busy / total))


def _tenth(pct: Optional[float]) -> Optional[float]:
    return None if pct is None else round(pct, 1)


def parse_meminfo(text: str) -> Tuple[Optional[int], Optional[int]]:
    """(used, total) bytes from /proc/meminfo; used = total - available, as ``free`` counts it."""
    fields = {}  # type: Dict[str, int]
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[key] = int(parts[0]) * 1024  # the kernel writes kB
    total = fields.get("MemTotal")
    if total is None:
        return None, None
    available = fields.get("MemAvailable")
    if available is None:  # kernels before 3.14
        available = sum(fields.get(k, 0) for k in ("MemFree", "Buffers", "Cached"))
    return total - available, total


def parse_pid_stat(data: bytes) -> Optional[ProcStat]:
    """(ppid, utime+stime ticks, start time, rss pages) from /proc/<pid>/stat; None for a zombie."""
    # The command (field 2) may hold spaces and parentheses: split after the last ')'.
    rest = data[data.rfind(b")") + 2:].split()
    if len(rest) < 22 or rest[0] == b"Z":
        return None
    return int(rest[1]), int(rest[11]) + int(rest[12]), int(rest[19]), int(rest[21])


def read_processes(proc: str = PROC) -> Dict[int, ProcStat]:
    """Every live process on the host, by pid.

    This runs every period over every process of the host, so it reads with
    os.read and parses bytes: a third cheaper than text files.
    """
    table = {}
    for name in os.listdir(proc):
        if not name.isdigit():
            continue
        try:
            fd = os.open("%s/%s/stat" % (proc, name), os.O_RDONLY)
            try:
                data = os.read(fd, 4096)
            finally:
                os.close(fd)
        except OSError:
            continue  # it exited while we looked
        parsed = parse_pid_stat(data)
        if parsed is not None:
            table[int(name)] = parsed
    return table


def descendants(root: int, table: Dict[int, ProcStat], exclude: Iterable[int] = ()) -> Set[int]:
    """The pids below ``root`` (not root itself), skipping ``exclude`` and everything under them."""
    children = {}  # type: Dict[int, List[int]]
    for pid, stat in table.items():
        children.setdefault(stat[0], []).append(pid)
    skip = set(exclude)
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in skip and child not in found:
                found.add(child)
                todo.append(child)
    return found


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as handle:
            return handle.read()
    except OSError:
        return None


class ProcfsSource:
    """Host CPU and memory, and the CPU and RSS of the processes below ``root_pid``.

    ``exclude`` gives pids whose subtrees are not the workload (the sampler's own
    tools, neuron-monitor and nvidia-smi).  Without ``root_pid`` (``monitor``)
    there is no workload and ``process`` is null.
    """

    name = SOURCE

    def __init__(self, root_pid: Optional[int] = None, exclude: Callable[[], Iterable[int]] = lambda: ()) -> None:
        self.root_pid = root_pid
        self.exclude = exclude
        self._cpu = (None, [])  # type: Tuple[Optional[CpuTimes], List[CpuTimes]]
        self._tree = {}  # type: Dict[Tuple[int, int], int]
        self._at = 0.0
        self._members = []  # type: List[int]

    def start(self) -> None:
        self._cpu = parse_cpu_times(_read(os.path.join(PROC, "stat")) or "")
        self._at = time.monotonic()
        if self.root_pid is not None:
            self._tree = self._tree_ticks(read_processes())[0]

    def _tree_ticks(self, table: Dict[int, ProcStat]) -> Tuple[Dict[Tuple[int, int], int], int]:
        """CPU ticks per workload process (keyed by pid and start time: pids are reused) and summed RSS pages."""
        assert self.root_pid is not None
        members = descendants(self.root_pid, table, self.exclude())
        self._members = sorted(members)
        return {(pid, table[pid][2]): table[pid][1] for pid in members}, sum(table[pid][3] for pid in members)

    def read(self) -> Dict[str, object]:
        missing = {}  # type: Dict[str, str]
        now = time.monotonic()
        elapsed, self._at = now - self._at, now
        before_total, before_cores = self._cpu
        stat_text = _read(os.path.join(PROC, "stat"))
        self._cpu = parse_cpu_times(stat_text or "")
        after_total, after_cores = self._cpu
        cpu_pct = busy_pct(before_total, after_total) if before_total and after_total else None
        per_core = None  # type: Optional[List[Optional[float]]]
        if before_cores and len(before_cores) == len(after_cores):
            # One decimal is finer than a period's clock ticks resolve, and keeps a 192-vCPU sample near 1 KB.
            per_core = [_tenth(busy_pct(b, a)) for b, a in zip(before_cores, after_cores)]
        if cpu_pct is None:
            missing["host.cpu_pct"] = "/proc/stat is not readable" if stat_text is None else \
                "no CPU time passed between two readings of /proc/stat"
        if per_core is None:
            missing["host.cpu_per_core_pct"] = "the number of vCPUs in /proc/stat changed (a CPU went on- or " \
                "offline)" if stat_text is not None else "/proc/stat is not readable"
        mem_used, mem_total = parse_meminfo(_read(os.path.join(PROC, "meminfo")) or "")
        if mem_total is None:
            missing["host.mem_used"] = missing["host.mem_total"] = "/proc/meminfo is not readable or has no MemTotal"
        host = {"cpu_pct": cpu_pct, "cpu_per_core_pct": per_core, "mem_used": mem_used, "mem_total": mem_total}
        reading = {"host": host, "process": self._process(elapsed, len(after_cores) or os.cpu_count() or 1, missing),
                   "missing": missing}  # type: Dict[str, object]
        if self.root_pid is not None:
            # Which processes are the workload's: the sampler marks neuron-monitor's runtimes with it (not emitted).
            reading["workload_pids"] = list(self._members)
        return reading

    def _process(self, elapsed: float, cpus: int, missing: Dict[str, str]) -> Optional[Dict[str, object]]:
        if self.root_pid is None:
            missing["process"] = "no workload: only the host is watched"
            return None
        ticks, rss_pages = self._tree_ticks(read_processes())
        before, self._tree = self._tree, ticks
        if not ticks:
            missing["process"] = "no workload process is running"
            return None
        # A process that started after the last reading spent all its ticks since then.
        spent = sum(now - before.get(key, 0) for key, now in ticks.items())
        cpu_pct = None  # type: Optional[float]
        if elapsed > 0:
            # As a share of the whole host (0-100), like the host figure and neuron-top's runtime vCPU.
            cpu_pct = max(0.0, min(100.0, 100.0 * spent / CLOCK_TICKS / elapsed / cpus))
        else:
            missing["process.cpu_pct"] = "no time passed between two readings"
        return {"cpu_pct": cpu_pct, "rss": rss_pages * PAGE_BYTES, "pids": len(ticks)}

    def pids(self) -> List[int]:
        return []

    def stop(self) -> None:
        """Nothing runs in the background."""
