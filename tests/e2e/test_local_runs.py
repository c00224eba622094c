"""Real runs on the built-in `local` host: real torch, real torch-xla (CPU PJRT), the real agent zipapp."""
from __future__ import annotations

import json

import pytest

from remote_agent.protocol import iter_events
from tests.helpers import tiny_model_flags

pytestmark = pytest.mark.slow

TRAIN = ["run", "--host", "local", "--workload", "train", *tiny_model_flags(), "--batch-size", "8",
         "--workers", "0", "--json"]


def _only(result_list):
    assert isinstance(result_list, list) and len(result_list) == 1
    return result_list[0]


def test_cpu_training_reports_step_times_and_throughput(run_cli, tmp_path):
    events_path = tmp_path / "events.jsonl"
    out = run_cli(*TRAIN, "--backend", "cpu", "--steps", "12", "--warmup", "3", "--events", str(events_path))
    assert out.code == 0, out.stderr
    result = _only(out.json())
    assert result["schema"] == "neuronbench.result/1" and result["status"] == "ok"
    assert result["host"] == "local" and result["backend"] == "cpu"
    train = result["train"]
    assert train["steps_total"] == 12 and train["steps_measured"] == 9 and train["window"] == [4, 12]
    assert train["compile"] == {"seconds": 0.0, "count": 0, "steps": [], "steps_wall_s": 0}
    step = train["step_time_s"]
    assert 0 < step["ci95"][0] <= step["median"] <= step["ci95"][1]
    assert step["p90"] >= step["median"] > 0
    assert train["throughput_samples_per_s"] > 0 and train["global_batch"] == 8
    assert result["env"]["torch"].startswith("2.9.0")  # the fingerprint of what ran
    assert result["spec"]["model_args"]["depth"] == 2

    # The raw stream is valid protocol v1 and holds one step event per step.
    events = list(iter_events(events_path.read_bytes().splitlines()))
    steps = [e for e in events if e["type"] == "step"]
    assert [s["i"] for s in steps] == list(range(1, 13))
    # The figures are the stream's figures: throughput = samples / wall time of the window.
    window = [s for s in steps if s["i"] > 3]
    assert train["throughput_samples_per_s"] == pytest.approx(
        sum(s["samples"] for s in window) / sum(s["dt_s"] for s in window))
    assert events[-1]["type"] == "end" and events[-1]["status"] == "ok"
    phases = [(e["name"], e["state"]) for e in events if e["type"] == "phase"]
    assert ("warmup", "start") in phases and ("measure", "start") in phases
    # progress on stderr, JSON only on stdout
    assert "steps" in out.stderr and "run ok" in out.stderr


def test_bf16_casts_the_model_and_loader_workers_default_from_the_host(run_cli):
    # No --workers: on a CPU device loader workers would only compete with the model for cores.
    out = run_cli("run", "--host", "local", "--workload", "train", *tiny_model_flags(), "--batch-size", "8",
                  "--backend", "cpu", "--steps", "4", "--warmup", "1", "--precision", "bf16", "--json")
    assert out.code == 0, out.stderr
    result = _only(out.json())
    # bf16 casts the model instead of the deprecated flag
    assert result["spec"]["precision"] == "bf16" and result["train"]["param_dtype"] == "bfloat16"
    assert result["spec"]["workers"] is None and result["spec"]["data"] == "host"
    assert result["train"]["data"] == {"source": "host", "loader_workers": 0, "workers_auto": True}


def test_inference_sweep_reports_every_percentile_per_batch_size(run_cli):
    out = run_cli("run", "--host", "local", "--workload", "infer", *tiny_model_flags(), "--backend", "cpu",
                  "--batch-sizes", "1,4", "--duration", "0.5", "--min-iters", "120", "--warmup", "3", "--json")
    assert out.code == 0, out.stderr
    result = _only(out.json())
    rows = result["infer"]
    assert [r["batch_size"] for r in rows] == [1, 4]
    for row in rows:
        lat = row["latency_ms"]
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"]
        assert lat["mean"] > 0 and row["compile_s"] > 0
        assert row["iterations"] >= 120 and row["p99_reliable"] is True
        assert row["throughput_per_s"] == pytest.approx(row["iterations"] * row["batch_size"] / row["wall_s"])
        assert row["wall_s"] >= 0.5


def test_repeats_run_fresh_processes_and_report_median_and_interval(run_cli):
    out = run_cli("run", "--host", "local", "--workload", "train", *tiny_model_flags(), "--backend", "cpu",
                  "--batch-size", "4", "--workers", "0", "--steps", "6", "--warmup", "2", "--repeats", "2")
    assert out.code == 0, out.stderr
    assert out.stdout.count("· ok") == 2
    assert "across repeats (median, bootstrap 95% interval):" in out.stdout
    assert "over 2 runs" in out.stdout


def test_probe_local_as_json(run_cli):
    out = run_cli("probe", "--host", "local", "--json")
    assert out.code == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["host"] == "local" and data["env"]["cpu"]["count"] >= 1
    assert data["env"]["instance_type"] is None and data["env"]["missing"]["instance_type"]


def test_xla_training_with_data_on_the_device_compiles_keeps_compiled_steps_out_and_says_so(run_cli):
    # One XLA training answers both (each costs a torch-xla import and a compile): compiled steps stay out of the
    # figures, and --data device feeds one batch made on the device.  tests/e2e/test_known_figures.py trains on
    # XLA with the host's data.
    flags = ["run", "--host", "local", "--workload", "train", *tiny_model_flags(), "--batch-size", "8",
             "--steps", "8", "--warmup", "1", "--backend", "xla"]
    text = run_cli(*flags, "--data", "device")
    assert text.code == 0, text.stderr
    assert "data on device" in text.stdout and "the input pipeline is not measured" in text.stdout
    # The Result of that same run, as stored (`runs show --json` is the Result `run --json` prints:
    # tests/e2e/test_store_and_reports.py).
    [listed] = run_cli("runs", "list", "--json").json()["runs"]
    result = run_cli("runs", "show", listed["run_id"], "--json").json()["result"]
    train = result["train"]
    assert train["data"] == {"source": "device", "loader_workers": 0, "workers_auto": False}
    assert train["steps_total"] == 8 and train["throughput_samples_per_s"] > 0

    assert result["backend"] == "xla" and result["backend_detail"]["pjrt_device"] == "CPU"
    assert train["compile"]["seconds"] > 0 and train["compile"]["count"] >= 1
    compiled = train["compile"]["steps"]
    assert compiled and compiled[0] == 1
    assert train["window"][0] > max(compiled)  # the steady window starts after the last compile
    assert train["steps_measured"] == 8 - max(compiled)
    assert train["step_time_s"]["median"] < train["compile"]["steps_wall_s"] / len(compiled)


def test_without_inotify_the_agent_polls_and_still_delivers_every_event_once(run_cli, cli_env, tmp_path):
    # The fallback of hosts without inotify, forced: supervisor and follower poll the files instead.
    events_path = tmp_path / "events.jsonl"
    out = run_cli(*TRAIN, "--backend", "cpu", "--steps", "6", "--warmup", "1", "--events", str(events_path),
                  env=dict(cli_env, NEURONBENCH_NO_INOTIFY="1"))
    assert out.code == 0, out.stderr
    assert _only(out.json())["status"] == "ok"
    events = list(iter_events(events_path.read_bytes().splitlines()))
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert [e["i"] for e in events if e["type"] == "step"] == [1, 2, 3, 4, 5, 6]
    assert events[-1]["type"] == "end" and events[-1]["status"] == "ok"
