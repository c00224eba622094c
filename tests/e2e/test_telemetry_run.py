"""Telemetry rides along every run: real CPU training through the CLI, the real agent zipapp, real /proc."""
from __future__ import annotations

import pytest

from remote_agent.protocol import iter_events
from tests.helpers import tiny_model_flags

pytestmark = pytest.mark.slow

TRAIN = ["run", "--host", "local", "--workload", "train", *tiny_model_flags(), "--backend", "cpu",
         "--batch-size", "8", "--workers", "0", "--json"]


def test_a_cpu_training_run_streams_samples_before_during_and_after_measuring(run_cli, tmp_path):
    events_path = tmp_path / "events.jsonl"
    out = run_cli(*TRAIN, "--steps", "80", "--warmup", "5", "--telemetry-period", "0.2",
                  "--events", str(events_path))
    assert out.code == 0, out.stderr
    result = out.json()[0]
    events = list(iter_events(events_path.read_bytes().splitlines()))
    samples = [e for e in events if e["type"] == "sample"]
    phases = {(e["name"], e["state"]): e["t"] for e in events if e["type"] == "phase"}
    start, end = phases[("measure", "start")], phases[("measure", "end")]
    before = [s for s in samples if s["t"] < start]
    during = [s for s in samples if start <= s["t"] <= end]
    after = [s for s in samples if s["t"] > end]
    assert before and during and after, [s["t"] for s in samples]
    # Sampling starts with the run, before the workload's set-up ends, and shares the steps' timeline.
    probe = next(e for e in events if e["type"] == "probe")
    warmup = next(e for e in events if e["type"] == "phase" and e["name"] == "warmup")
    assert probe["seq"] < samples[0]["seq"] < warmup["seq"]
    steps = [e for e in events if e["type"] == "step"]
    assert steps[0]["t"] > before[0]["t"] and steps[-1]["t"] < after[-1]["t"]
    for sample in samples:
        assert sample["source"] == "procfs" and sample["period_s"] <= 0.2
        assert [(d["index"], d["kind"]) for d in sample["devices"]] == [(0, "cpu")]  # a CPU host's device
        assert 0 < sample["host"]["mem_used"] < sample["host"]["mem_total"]
    # While it measures, the workload process is alive and working.
    assert all(s["process"]["rss"] > 0 and s["process"]["pids"] >= 1 for s in during)
    assert max(s["process"]["cpu_pct"] for s in during) > 0
    assert after[-1]["process"] is None and after[-1]["missing"]["process"] == "no workload process is running"

    telemetry = result["telemetry"]
    assert telemetry["sources"] == ["procfs"] and telemetry["period_s"] == 0.2
    assert telemetry["samples"] == len(samples)
    measure = telemetry["measure"]
    assert measure["windows"] == 1 and measure["samples"] >= 1
    cpu = measure["devices"][0]
    assert cpu["kind"] == "cpu" and 0 < cpu["util_mean_pct"] <= cpu["util_p95_pct"] <= 100
    peak = telemetry["peak"]
    assert peak["process_rss"] == max(s["process"]["rss"] for s in samples if s["process"])
    assert peak["host_mem_used"] == max(s["host"]["mem_used"] for s in samples)
    assert telemetry["missing"] == {}


def test_telemetry_period_zero_switches_sampling_off(run_cli, tmp_path):
    events_path = tmp_path / "events.jsonl"
    out = run_cli(*TRAIN, "--steps", "3", "--warmup", "1", "--telemetry-period", "0", "--events", str(events_path))
    assert out.code == 0, out.stderr
    events = list(iter_events(events_path.read_bytes().splitlines()))
    assert not [e for e in events if e["type"] == "sample"]
    telemetry = out.json()[0]["telemetry"]
    assert telemetry["samples"] == 0 and telemetry["measure"] is None
    assert telemetry["missing"]["measure"] == "telemetry was switched off (telemetry_period 0)"
