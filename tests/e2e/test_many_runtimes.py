"""A trn1.32xlarge with 32 Neuron runtimes (one torchrun worker per NeuronCore), as a user meets it.

Each runtime lists every core of the host, the 31 it does not use at 0
(tests/data/neuron/neuron-monitor-trn1-32xlarge.jsonl, see its README).  The CLI and
the real agent zipapp run as a user runs them; the neuron-monitor double replays
the report's steady-training lines.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from remote_agent.protocol import decode
from tests.helpers import tiny_model_flags

REPO = Path(__file__).resolve().parents[2]
DOUBLES = REPO / "tests" / "doubles" / "bin"
CORES = 32


@pytest.fixture
def trn1_32xlarge(cli_env, tmp_path):
    """cli_env on a host whose neuron-monitor (the double) reports 32 busy runtimes."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "neuron-monitor").symlink_to(DOUBLES / "neuron-monitor")
    env = dict(cli_env)
    env["PATH"] = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"
    env["NEURONBENCH_FAKE_NEURON_MONITOR"] = "neuron-monitor-trn1-32xlarge.jsonl"
    env["NEURONBENCH_FAKE_NEURON_MONITOR_START"] = "3"  # steady training on all 32 cores
    return env


def test_monitor_json_shows_all_32_cores_busy_and_each_worker_on_its_own_core(run_cli, trn1_32xlarge):
    out = run_cli("monitor", "--host", "local", "--json", "--duration", "1.2", "--period", "0.4", env=trn1_32xlarge)
    assert out.code == 0, out.stderr
    served = [e for e in (decode(line) for line in out.stdout.splitlines()) if e["devices"]]
    assert served
    for event in served:
        assert [(d["index"], d["device"]) for d in event["devices"]] == [(k, k // 2) for k in range(CORES)]
        assert all(d["util_pct"] > 70 for d in event["devices"]), [d["util_pct"] for d in event["devices"]]
        assert [(p["pid"], p["cores"]) for p in event["processes"]] == [(7001 + k, [k]) for k in range(CORES)]


def test_the_monitor_screen_draws_every_core_busy(run_cli, trn1_32xlarge):
    out = run_cli("monitor", "--host", "local", "--duration", "0.5", "--period", "0.4", env=trn1_32xlarge)
    assert out.code == 0, out.stderr
    frame = out.stdout.split("neuronbench monitor · local")[1]
    shares = {int(m[1]): float(m[2]) for m in re.finditer(r" ND\d+ NC(\d+) .*? +(\d+\.\d)%", frame)}
    assert sorted(shares) == list(range(CORES)) and min(shares.values()) > 70, shares
    assert re.search(r"^ +7032  31 ", frame, re.MULTILINE), frame  # the last worker, on the last core


@pytest.mark.slow
def test_a_runs_telemetry_averages_every_core_while_measuring(run_cli, trn1_32xlarge):
    out = run_cli("run", "--host", "local", "--workload", "train", *tiny_model_flags(), "--backend", "cpu",
                  "--batch-size", "8", "--workers", "0", "--steps", "80", "--warmup", "5",
                  "--telemetry-period", "0.2", "--json", env=trn1_32xlarge)
    assert out.code == 0, out.stderr
    telemetry = out.json()[0]["telemetry"]
    assert telemetry["sources"][0] == "neuron-monitor"
    devices = telemetry["measure"]["devices"]
    assert [(d["index"], d["kind"]) for d in devices] == [(k, "neuroncore") for k in range(CORES)]
    assert all(d["util_mean_pct"] > 70 for d in devices), [d["util_mean_pct"] for d in devices]
    peaks = telemetry["peak"]["devices"]
    assert [d["mem_used"] for d in peaks] == [4157997056] * CORES  # each core's own worker's 3.87 GiB
