"""/proc readings: the parsers on literal kernel text, and the source on real processes."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from remote_agent.monitor.procfs import (
    ProcfsSource,
    busy_pct,
    descendants,
    parse_cpu_times,
    parse_meminfo,
    parse_pid_stat,
)

STAT = """cpu  100 5 50 800 40 3 2 0 0 0
cpu0 60 5 30 380 20 2 1 0 0 0
cpu1 40 0 20 420 20 1 1 0 0 0
intr 12345
ctxt 999
"""


def test_cpu_times_count_busy_ticks_without_idle_and_iowait():
    total, cores = parse_cpu_times(STAT)
    assert total == (160, 1000) and cores == [(98, 498), (62, 502)]
    later, _ = parse_cpu_times(STAT.replace("cpu  100 5 50 800", "cpu  150 5 50 850"))
    assert busy_pct(total, later) == 50.0  # 50 of the 100 ticks that passed were busy
    assert busy_pct(total, total) is None  # no tick passed: unknown, not 0


def test_meminfo_used_is_total_minus_available():
    text = "MemTotal:       16000 kB\nMemFree:         1000 kB\nMemAvailable:    6000 kB\nCached: 4000 kB\n"
    assert parse_meminfo(text) == (10000 * 1024, 16000 * 1024)
    old_kernel = "MemTotal: 16000 kB\nMemFree: 1000 kB\nBuffers: 500 kB\nCached: 4500 kB\n"
    assert parse_meminfo(old_kernel) == (10000 * 1024, 16000 * 1024)
    assert parse_meminfo("") == (None, None)


def test_process_stat_survives_odd_command_names_and_skips_zombies():
    fields = "S 41 42 42 0 -1 4194560 500 0 0 0 170 30 0 0 20 0 3 0 8812 123456 2048 18446744073709551615"
    assert parse_pid_stat(b"4211 (python (rank 0)) " + fields.encode()) == (41, 200, 8812, 2048)
    assert parse_pid_stat(b"4211 (x) Z " + fields[2:].encode()) is None
    table = {10: (1, 0, 0, 0), 11: (10, 0, 0, 0), 12: (11, 0, 0, 0), 13: (10, 0, 0, 0), 14: (13, 0, 0, 0)}
    assert descendants(10, table) == {11, 12, 13, 14}
    assert descendants(10, table, exclude=[13]) == {11, 12}  # a tool and everything under it


def _cpu_seconds_of(pid: int) -> float:
    """utime + stime of one process, read from /proc as the kernel counts them."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# A parent of its own for the two children: the pytest process's tree also holds what other tests (on this
# xdist worker) left running, a moto server for one.
_PARENT = """
import subprocess, sys, time
busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(busy.pid, flush=True)
time.sleep(120)
"""


def test_a_busy_child_process_shows_up_as_cpu_load():
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        busy = int(parent.stdout.readline())
        time.sleep(0.5)  # past the children's interpreter start-up, which is CPU work of its own
        tree = ProcfsSource(root_pid=parent.pid)
        only_idle = ProcfsSource(root_pid=parent.pid, exclude=lambda: [busy])
        outer = time.monotonic()
        for source in (tree, only_idle):
            source.start()
        inner = _cpu_seconds_of(busy)
        # Until the busy loop has had a fifth of a CPU-second (a fixed sleep failed on a machine whose other
        # work left it a tenth of a CPU): the reading is then checked against what the kernel gave it.
        deadline = time.monotonic() + 60
        while (_cpu_seconds_of(busy) - inner < 0.2 or time.monotonic() - outer < 1.0) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        busy_s = _cpu_seconds_of(busy) - inner
        loaded, quiet = tree.read(), only_idle.read()
        wall = time.monotonic() - outer
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()
    cpus = os.cpu_count() or 1
    # The tree's reading spans at least the busy child's own CPU time measured inside it, over at most `wall`.
    at_least = 100.0 * busy_s / wall / cpus
    assert busy_s >= 0.2 and loaded["process"]["cpu_pct"] >= 0.9 * at_least > 0
    assert loaded["process"]["pids"] == 2 and loaded["process"]["rss"] > 1024 * 1024
    assert quiet["process"]["cpu_pct"] < 5.0 / cpus and quiet["process"]["pids"] == 1
    assert loaded["host"]["cpu_pct"] >= 0.9 * at_least
    assert len(loaded["host"]["cpu_per_core_pct"]) == cpus
    assert 0 < loaded["host"]["mem_used"] < loaded["host"]["mem_total"]




def _proc_stat(cores: int, busy: int, idle: int) -> str:
    lines = [f"cpu  {busy * cores} 0 0 {idle * cores} 0 0 0 0 0 0"]
    lines += [f"cpu{i} {busy} 0 0 {idle} 0 0 0 0 0 0" for i in range(cores)]
    return "\n".join(lines) + "\nintr 1\n"


def test_a_192_vcpu_host_is_sampled_vcpu_by_vcpu_in_a_small_sample(tmp_path, monkeypatch):
    import json

    from remote_agent.monitor import procfs

    (tmp_path / "meminfo").write_text("MemTotal: 1572864000 kB\nMemAvailable: 1000000000 kB\n")
    stat = tmp_path / "stat"
    stat.write_text(_proc_stat(192, busy=100, idle=200))
    monkeypatch.setattr(procfs, "PROC", str(tmp_path))
    source = ProcfsSource()
    source.start()
    stat.write_text(_proc_stat(192, busy=101, idle=202))  # 1 of the 3 ticks since was busy on every vCPU
    host = source.read()["host"]
    assert host["cpu_per_core_pct"] == [33.3] * 192  # every vCPU, to a tenth of a percent
    assert len(json.dumps(host["cpu_per_core_pct"])) <= 192 * 6  # about 1 KB a sample, not 3.6
