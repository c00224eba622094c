"""The sampler with real processes: the host-tool doubles on PATH, real /proc, real child processes.

The doubles (tests/doubles/bin) replay the recorded neuron-monitor reports at the period of the config
the agent writes, and nvidia-smi's streaming CSV; nothing inside the product is mocked.
"""
from __future__ import annotations

import json
import os
import queue
import sys
from pathlib import Path

import pytest

from remote_agent.monitor import sampler as sampler_module
from remote_agent.monitor.neuron import map_report
from remote_agent.monitor.sampler import Sampler, host_sources, merge, next_tick
from remote_agent.probe import commands
from tests.helpers import process_tree

DOUBLES = Path(__file__).resolve().parents[1] / "doubles" / "bin"
NEURON = Path(__file__).resolve().parents[1] / "data" / "neuron"
MIB = 1024 * 1024
PERIOD = 0.2


@pytest.fixture
def host_with(monkeypatch, tmp_path):
    """Make this a host that has exactly the named tools (doubles) and nothing in /opt/aws/neuron/bin."""

    def install(*tools: str) -> None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        for tool in tools:
            (bin_dir / tool).symlink_to(DOUBLES / tool)
        # The doubles are `#!/usr/bin/env python3` scripts: keep a python3 on PATH, and nothing else.
        monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}")
        monkeypatch.setattr(commands, "NEURON_BIN_DIR", str(tmp_path / "no-neuron-bin"))
        monkeypatch.setattr(sampler_module, "NEURON_BIN_DIR", str(tmp_path / "no-neuron-bin"))

    for name in list(os.environ):
        if name.startswith(("NEURONBENCH_FAKE_NEURON_MONITOR", "NEURONBENCH_FAKE_NVIDIA_SMI")):
            monkeypatch.delenv(name)
    return install


class Samples:
    """Collects what a Sampler emits, for the test thread to wait on."""

    def __init__(self) -> None:
        self.queue: queue.Queue = queue.Queue()
        self.seen: list[dict] = []

    def __call__(self, t: float, sample: dict) -> None:
        self.queue.put(dict(sample, t=t))

    def until(self, predicate, limit: int = 150) -> dict:
        while len(self.seen) < limit:
            sample = self.queue.get(timeout=30)
            self.seen.append(sample)
            if predicate(sample):
                return sample
        raise AssertionError(f"no sample matched in {limit}: last {self.seen[-1]}")


def running(sources, period=PERIOD):
    samples = Samples()
    sampler = Sampler(sources, period, samples)
    sampler.start()
    return sampler, samples


def neuron_utils(sample):
    return [d["util_pct"] for d in sample["devices"] if d["kind"] == "neuroncore"]


def test_neuron_monitor_streams_the_training_timeline_at_the_configured_period(host_with, tmp_path):
    host_with("neuron-monitor")
    config = tmp_path / "neuron-monitor.json"
    sources = host_sources(PERIOD, neuron_config=str(config))
    assert [s.name for s in sources] == ["neuron-monitor", "procfs"]
    sampler, samples = running(sources)
    try:
        steady = samples.until(lambda s: any(u and u > 70 for u in neuron_utils(s)))
    finally:
        sampler.stop()
    assert '"period": "200ms"' in config.read_text()  # the double paces itself by it
    # Every sample's cores are one of the recorded reports, in the recorded order (a tick may see a
    # report twice or miss one, never invent one); compile (0 %) came before the steady state.
    recorded = [neuron_utils(map_report(json.loads(line)))
                for line in (NEURON / "neuron-monitor-trn1-2xlarge.jsonl").read_text().splitlines()]
    position = 0
    for sample in samples.seen:
        if not sample["devices"]:
            assert sample["missing"]["devices"] == "waiting for neuron-monitor's first report"
            continue
        position = recorded.index(neuron_utils(sample), position)
    compiling = [s for s in samples.seen if s["runtime"] and s["runtime"]["completed"] == 0]
    assert compiling and neuron_utils(compiling[0]) == [0.0, 0.0]
    assert compiling[0]["missing"]["runtime.latency_p50_s"] == "no execution completed in this period"
    assert steady["source"] == "neuron-monitor" and steady["sources"] == ["neuron-monitor", "procfs"]
    assert [p["pid"] for p in steady["processes"]] == [4211, 4212]
    # The tool was the sampler's child and went with it.
    assert sources[0].stream.proc.poll() is not None


def test_a_failing_neuron_monitor_is_reported_and_the_host_is_still_sampled(host_with, monkeypatch):
    host_with("neuron-monitor")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_MONITOR_MODE", "fail")
    sampler, samples = running(host_sources(PERIOD))
    try:
        sample = samples.until(lambda s: "exited" in s["missing"].get("devices", ""))
    finally:
        sampler.stop()
    assert sample["missing"]["devices"] == ("neuron-monitor exited with status 1: neuron-monitor: failed to open "
                                            "the Neuron driver: /dev/neuron0: no such file or directory")
    assert sample["devices"] == []  # not the CPU in the accelerator's place
    assert sample["host"]["mem_total"] > 0 and sample["source"] == "procfs"


def test_nvidia_smi_rows_become_gpus_with_bytes_and_watts(host_with, monkeypatch):
    host_with("nvidia-smi")
    monkeypatch.setenv("NEURONBENCH_FAKE_NVIDIA_SMI_COUNT", "2")
    sampler, samples = running(host_sources(PERIOD))
    try:
        busy = samples.until(lambda s: any(d.get("util_pct") == 97.0 for d in s["devices"]))
    finally:
        sampler.stop()
    assert busy["devices"] == [
        {"index": 0, "kind": "gpu", "util_pct": 97.0, "mem_used": 18542 * MIB, "mem_total": 23028 * MIB,
         "power_w": 213.47, "temp_c": 61.0, "sm_clock_mhz": 1710.0},
        {"index": 1, "kind": "gpu", "util_pct": 96.0, "mem_used": 18542 * MIB, "mem_total": 23028 * MIB,
         "power_w": 213.47, "temp_c": 61.0, "sm_clock_mhz": 1710.0},
    ]
    assert busy["source"] == "nvidia-smi"
    assert busy["runtime"] is None and "neuron-monitor is not installed" in busy["missing"]["runtime"]


def test_nvidia_smi_na_fields_and_failures_are_null_with_the_tools_words(host_with, monkeypatch):
    host_with("nvidia-smi")
    monkeypatch.setenv("NEURONBENCH_FAKE_NVIDIA_SMI_MODE", "no-power")
    sampler, samples = running(host_sources(PERIOD))
    try:
        sample = samples.until(lambda s: bool(s["devices"]))
    finally:
        sampler.stop()
    assert sample["devices"][0]["power_w"] is None
    assert sample["missing"]["devices.0.power_w"] == "nvidia-smi reports [N/A] for power.draw"

    monkeypatch.setenv("NEURONBENCH_FAKE_NVIDIA_SMI_MODE", "fail")
    sampler, samples = running(host_sources(PERIOD))
    try:
        sample = samples.until(lambda s: "exited" in s["missing"].get("devices", ""))
    finally:
        sampler.stop()
    assert sample["missing"]["devices"].startswith(
        "nvidia-smi exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
        "driver.")


def test_the_samplers_own_tools_are_not_counted_as_the_workload(host_with):
    host_with("neuron-monitor")
    # On an xdist worker this process may already have children another test left for the session (a moto
    # server): those are counted, as a workload's would be; the sampler's own neuron-monitor never is.
    before = process_tree(os.getpid()) - {os.getpid()}
    sampler, samples = running(host_sources(PERIOD, root_pid=os.getpid()))
    try:
        sample = samples.until(lambda s: bool(s["devices"]))
    finally:
        sampler.stop()
    if not before:
        assert sample["process"] is None and sample["missing"]["process"] == "no workload process is running"
    else:
        assert sample["process"]["pids"] == len(before), (sample["process"], before)


def test_merge_prefers_the_device_tools_host_figures_and_fills_gaps_from_proc():
    startup = map_report(json.loads((NEURON / "neuron-monitor-trn1-2xlarge.jsonl").read_text().splitlines()[0]))
    proc = {"host": {"cpu_pct": 12.5, "cpu_per_core_pct": [10.0, 15.0], "mem_used": 1, "mem_total": 2},
            "process": {"cpu_pct": 3.0, "rss": 4096, "pids": 1}, "missing": {}}
    sample = merge([("neuron-monitor", startup), ("procfs", proc)], 1.0)
    # neuron-monitor's first report has memory but no vCPU figures: /proc supplies those.
    assert sample["host"] == {"cpu_pct": 12.5, "cpu_per_core_pct": [10.0, 15.0], "mem_used": 1297305600,
                              "mem_total": 33117732864}
    assert "host.cpu_pct" not in sample["missing"]
    assert sample["missing"]["runtime"] == "no Neuron runtime is running (no process holds a NeuronCore)"
    assert [d["kind"] for d in sample["devices"]] == ["neuroncore", "neuroncore"]
    assert sample["process"] == {"cpu_pct": 3.0, "rss": 4096, "pids": 1} and sample["processes"] == []


def test_on_a_cpu_host_the_cpu_is_the_device():
    proc = {"host": {"cpu_pct": None, "cpu_per_core_pct": None, "mem_used": 5, "mem_total": 9},
            "process": None, "missing": {"host.cpu_pct": "/proc/stat is not readable", "process": "none"}}
    sample = merge([("procfs", proc)], 0.5)
    assert sample["devices"] == [{"index": 0, "kind": "cpu", "util_pct": None, "mem_used": 5, "mem_total": 9}]
    assert sample["missing"]["devices.0.util_pct"] == "/proc/stat is not readable"
    assert sample["source"] == "procfs" and sample["period_s"] == 0.5


def test_the_cadence_skips_ticks_missed_in_a_stall_instead_of_bursting():
    assert next_tick(1, 1.01, 1.0) == 2  # on time: the next period
    assert next_tick(1, 3.5, 1.0) == 4  # stalled 2.5 periods: wait for the next future deadline
    assert next_tick(7, 0.5, 0.2) == 8  # never goes back



def test_neuroncores_are_attributed_to_the_runs_own_processes_not_anothers(host_with, monkeypatch, tmp_path):
    """neuron-monitor lists every process that holds NeuronCores.  The run's telemetry says which cores its own
    processes held while it measured; with only another process's runtime listed, the figures are not the
    run's.  The double replays the trn1.2xlarge training (runtimes 4211 on core 0, 4212 on core 1): a live child
    of this process opens the runtime on core 0 and takes 4211's place, as the stand-in libraries make it."""
    import subprocess
    import time

    from remote_agent.monitor.digest import TelemetryDigest

    host_with("neuron-monitor")
    runtimes = tmp_path / "runtimes"
    runtimes.mkdir()
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_MONITOR_START", "20")  # steady training: both cores busy
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_RUNTIMES", str(runtimes))

    def measured(worker_on_core_0: bool) -> dict:
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            if worker_on_core_0:
                (runtimes / f"{child.pid}.json").write_text(json.dumps({"pid": child.pid, "cores": [0]}))
            digest = TelemetryDigest(PERIOD, ["neuron-monitor", "procfs"])
            sampler, samples = running(host_sources(PERIOD, root_pid=os.getpid()))
            try:
                begin = time.time()
                sample = samples.until(lambda s: len(s.get("processes") or []) == 2 and s["t"] > begin + PERIOD)
                for seen in samples.seen:
                    digest.add(seen["t"], seen)
            finally:
                sampler.stop()
            rows = {row["pid"]: row for row in sample["processes"]}
            return {"rows": rows, "child": child.pid,
                    "telemetry": digest.summary([(samples.seen[0]["t"] - PERIOD, sample["t"])])}
        finally:
            child.kill()
            child.wait()
            for path in runtimes.iterdir():
                path.unlink()

    ours = measured(worker_on_core_0=True)
    child = ours["child"]
    assert ours["rows"][child]["run"] is True and ours["rows"][child]["cores"] == [0]
    assert ours["rows"][4212]["run"] is False and ours["rows"][4212]["cores"] == [1]
    measure = ours["telemetry"]["measure"]
    assert measure["run_cores"] == [0] and measure["other_processes"] == [{"pid": 4212, "cores": [1]}]
    assert [(d["index"], d["held_by"]) for d in measure["devices"]] == [(0, "run"), (1, "other")]
    assert measure["run_util_mean_pct"] == measure["devices"][0]["util_mean_pct"] > 0
    assert "runtime" not in ours["telemetry"]["missing"]

    theirs = measured(worker_on_core_0=False)
    assert {row["run"] for row in theirs["rows"].values()} == {False}
    assert theirs["telemetry"]["missing"]["runtime"] == (
        "neuron-monitor listed only other processes' Neuron runtimes while the run measured (pid 4211, 4212), "
        "none of this run's: its NeuronCore figures are not this run's")
