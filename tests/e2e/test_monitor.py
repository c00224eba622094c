"""``neuronbench monitor`` and the agent's ``monitor`` command, with the host's tools replaced by the doubles.

The CLI runs as a user runs it (a fresh process, the real agent zipapp through LocalTransport); the agent
starts the neuron-monitor double, which replays the recorded inf2.xlarge reports.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from remote_agent.protocol import decode, iter_events

REPO = Path(__file__).resolve().parents[2]
DOUBLES = REPO / "tests" / "doubles" / "bin"


@pytest.fixture
def neuron_host(cli_env, tmp_path):
    """cli_env on a host whose only accelerator tool is neuron-monitor (the double), serving on inf2."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "neuron-monitor").symlink_to(DOUBLES / "neuron-monitor")
    env = dict(cli_env)
    env["PATH"] = f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin"
    env["NEURONBENCH_FAKE_NEURON_MONITOR"] = "neuron-monitor-inf2-xlarge.jsonl"
    env["NEURONBENCH_FAKE_NEURON_MONITOR_START"] = "6"  # steady serving
    return env


def test_monitor_json_streams_sample_events_of_the_neuron_host(run_cli, neuron_host):
    out = run_cli("monitor", "--host", "local", "--json", "--duration", "1.6", "--period", "0.4", env=neuron_host)
    assert out.code == 0, out.stderr
    events = [decode(line) for line in out.stdout.splitlines()]
    assert len(events) >= 2 and {e["type"] for e in events} == {"sample"}
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    served = [e for e in events if e["devices"]]
    assert served, events[0]["missing"]
    for event in served:
        assert [(d["index"], d["kind"], d["device"]) for d in event["devices"]] == [(0, "neuroncore", 0),
                                                                                    (1, "neuroncore", 0)]
        assert all(84.0 <= d["util_pct"] <= 94.2 for d in event["devices"])  # the recorded steady band
        assert [(p["pid"], p["cores"]) for p in event["processes"]] == [(5120, [0, 1])]
        assert event["period_s"] == 0.4 and event["host"]["mem_total"] > 0
        assert event["process"] is None and event["missing"]["process"] == "no workload: only the host is watched"


def test_monitor_draws_cores_host_and_processes(run_cli, neuron_host):
    out = run_cli("monitor", "--host", "local", "--duration", "1.2", "--period", "0.4", env=neuron_host)
    assert out.code == 0, out.stderr
    frame = out.stdout
    assert frame.count("neuronbench monitor · local") >= 2  # one frame per sample, one after another
    assert " ND0 NC0 " in frame and " ND0 NC1 " in frame and "ND0 device memory 1.00 GiB / 32.00 GiB" in frame
    assert "Processes using NeuronCores" in frame and "   5120  0,1 " in frame
    assert " vCPU " in frame and " memory " in frame


@pytest.mark.parametrize("args, sentence", [
    (["--period", "0.05"], "--period must be between 0.2 and 60 seconds, not 0.05"),
    (["--duration", "0"], "--duration must be a positive number of seconds, not 0"),
])
def test_monitor_refuses_bad_periods_and_durations(run_cli, args, sentence):
    out = run_cli("monitor", "--host", "local", *args)
    assert out.code == 2 and sentence in out.stderr and out.stdout == ""


def _agent_monitor(env):
    return subprocess.Popen([sys.executable, "-m", "remote_agent", "monitor", "--period", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)


def test_the_agent_monitor_ends_cleanly_on_sigterm(neuron_host):
    proc = _agent_monitor(neuron_host)
    assert decode(proc.stdout.readline())["type"] == "hello"
    assert decode(proc.stdout.readline())["type"] == "sample"
    proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read().splitlines()
    assert proc.wait(timeout=20) == 0, proc.stderr.read()
    last = decode(rest[-1])
    assert last["type"] == "end" and last["status"] == "ok"
    assert all(decode(line)["type"] == "sample" for line in rest[:-1])


def test_the_agent_monitor_stops_when_its_reader_goes_away(neuron_host):
    proc = _agent_monitor(neuron_host)
    assert decode(proc.stdout.readline())["type"] == "hello"
    proc.stdout.close()  # the app (or the SSH channel) is gone
    assert proc.wait(timeout=20) == 0
    assert b"Traceback" not in proc.stderr.read()


def test_the_agent_monitor_refuses_a_bad_period_as_an_event():
    proc = subprocess.run([sys.executable, "-m", "remote_agent", "monitor", "--period", "0"], capture_output=True,
                          cwd=REPO, timeout=60)
    events = list(iter_events(proc.stdout.splitlines()))
    assert proc.returncode == 2 and [e["type"] for e in events] == ["hello", "error", "end"]
    assert events[1]["kind"] == "bad_spec" and "--period must be between 0.2 and 60" in events[1]["message"]
