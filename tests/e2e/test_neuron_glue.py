"""The neuron backend's real code, run end to end on a machine without Neuron.

The host's Neuron parts are test doubles, as DESIGN.md §7 asks: `neuron-ls`
(tests/doubles/bin, replaying a recorded inf2.xlarge: one device, 2 NeuronCores),
a stand-in `/dev/neuron0` (NEURONBENCH_NEURON_DEVICE_GLOB) and a stand-in
`torch_neuronx` (tests/doubles/python: trace = a TorchScript trace, DataParallel =
the batch split over N copies).  Everything else is the product: the CLI, the
agent zipapp, the supervisor's pre-flight, the worker, NeuronBackend's trace, save,
load and DataParallel, and the batch it feeds.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, DOUBLES_BIN, REPO
from tests.helpers import tiny_model_flags

pytestmark = pytest.mark.slow
STAND_INS = REPO / "tests" / "doubles" / "python"


@pytest.fixture
def neuron_host(cli_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """This computer dressed as an inf2.xlarge with both NeuronCores free."""
    devices = json.loads((DATA / "neuron" / "neuron-ls-inf2-xlarge.json").read_text())
    for device in devices:
        device["neuron_processes"] = []  # the recording shows a server holding the cores: free them
    listing = tmp_path / "neuron-ls-inf2-idle.json"
    listing.write_text(json.dumps(devices))
    dev = tmp_path / "dev"
    dev.mkdir()
    (dev / "neuron0").write_text("")
    bindir = tmp_path / "host-bin"
    bindir.mkdir()
    (bindir / "neuron-ls").symlink_to(DOUBLES_BIN / "neuron-ls")
    env = dict(cli_env)
    env.update({
        "PATH": f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": f"{STAND_INS}{os.pathsep}{env.get('PYTHONPATH', '')}",
        "NEURONBENCH_NEURON_DEVICE_GLOB": str(dev / "neuron*"),
        "NEURONBENCH_FAKE_NEURON_LS": str(listing),
        "NEURONBENCH_FAKE_NEURONX_LOG": str(tmp_path / "torch_neuronx.log"),
    })
    return env


def neuronx_calls(env: dict[str, str]) -> list[dict]:
    log = Path(env["NEURONBENCH_FAKE_NEURONX_LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_traced_inference_over_two_neuroncores_runs_the_real_backend(run_cli, neuron_host, app_paths):
    out = run_cli("run", "--host", "local", "--workload", "infer", "--backend", "neuron", *tiny_model_flags(),
                  "--batch-sizes", "1,4", "--nproc", "2", "--warmup", "2", "--min-iters", "20",
                  "--duration", "0.2", "--json", env=neuron_host)
    assert out.code == 0, out.stderr
    result = out.json()[0]
    assert result["status"] == "ok" and result["backend"] == "neuron"
    assert result["env"]["torch_neuronx"] == "2.9.0.2.11.0+testdouble"
    assert result["env"]["neuron_cores"] == 2
    detail = result["backend_detail"]
    assert detail["torch_neuronx"] == "2.9.0.2.11.0+testdouble" and "NeuronCore x2" in detail["device"]
    # Each request feeds both NeuronCores one traced batch: throughput counts both.
    rows = {row["batch_size"]: row for row in result["infer"]}
    assert rows[1]["samples_per_request"] == 2 and rows[4]["samples_per_request"] == 8
    for row in rows.values():
        assert row["iterations"] >= 20 and row["throughput_per_s"] > 0

    calls = neuronx_calls(neuron_host)
    traces = [c for c in calls if c["call"] == "trace"]
    assert [c["batch"] for c in traces] == [1, 4]
    assert len({c["pid"] for c in traces}) == 2  # one fresh process per batch size (never fork the runtime)
    assert [c["cores"] for c in calls if c["call"] == "DataParallel"] == [[0, 1], [0, 1]]
    assert all(not c["dynamic"] for c in calls if c["call"] == "DataParallel")
    assert [c["per_core"] for c in calls if c["call"] == "DataParallel.forward"] == [[1, 1], [4, 4]]
    # The traced artefact was saved and loaded from the run's folder on the host, as the seed serves it.
    run_dir = app_paths.local_agent_home / "runs" / result["run_id"]
    assert sorted(p.name for p in run_dir.glob("traced-bs*.pt")) == ["traced-bs1.pt", "traced-bs4.pt"]


def test_more_processes_than_neuroncores_is_refused_before_anything_starts(run_cli, neuron_host, tmp_path):
    events = tmp_path / "events.jsonl"
    out = run_cli("run", "--host", "local", "--workload", "infer", "--backend", "neuron", *tiny_model_flags(),
                  "--batch-sizes", "1", "--nproc", "4", "--events", str(events), env=neuron_host)
    assert out.code != 0
    assert "--nproc 4 but this host has 2 NeuronCores: run with --nproc 2 or fewer" in out.stderr
    stream = [json.loads(line) for line in events.read_text().splitlines()]
    assert stream[-1] == {**stream[-1], "type": "end", "status": "failed"}
    assert not any(e["type"] == "log" and "workload process" in e["message"] for e in stream)
    assert neuronx_calls(neuron_host) == []  # nothing traced, no NeuronCore touched


def test_more_training_processes_than_gpus_is_refused_in_one_sentence(run_cli, cli_env, tmp_path):
    """The H100 failure (rank 1: `CUDA error: invalid device ordinal`) as a pre-flight sentence.

    The GPU count comes from the host's `nvidia-smi` (a double replaying one A10G): the refusal
    happens before any worker imports torch, so no real GPU is needed to see it.
    """
    bindir = tmp_path / "host-bin"
    bindir.mkdir()
    (bindir / "nvidia-smi").symlink_to(DOUBLES_BIN / "nvidia-smi")
    env = dict(cli_env, PATH=f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{cli_env['PATH']}",
               NEURONBENCH_FAKE_NVIDIA_SMI_COUNT="1")
    out = run_cli("run", "--host", "local", "--workload", "train", "--backend", "cuda", *tiny_model_flags(),
                  "--steps", "5", "--warmup", "1", "--nproc", "2", "--json", env=env)
    assert out.code != 0
    result = out.json()[0]
    assert result["status"] == "failed"
    assert result["error"]["kind"] == "bad_spec"
    assert result["error"]["message"].startswith("--nproc 2 but this host has 1 GPU: run with --nproc 1")
    assert "--nproc 2 but this host has 1 GPU" in out.stderr
    assert result["train"] is None


def test_traced_inference_of_a_users_file_with_tuple_and_dict_inputs(run_cli, neuron_host):
    """torch_neuronx.trace takes the inputs as a tuple in forward's order, DataParallel splits each of them;
    a dict-input model goes through the wrapper that binds them by name.  Both are checked against eager."""
    models = DATA / "models"
    for model, inputs, args in ((f"file:{models / 'two_tower.py'}", 2, []),
                                (f"file:{models / 'tagger.py'}:make_model", 2, ["--model-arg", "with_tags=false"])):
        out = run_cli("run", "--host", "local", "--workload", "infer", "--backend", "neuron", "--model", model, *args,
                      "--batch-sizes", "2", "--nproc", "2", "--warmup", "1", "--min-iters", "10",
                      "--duration", "0.1", "--json", env=neuron_host)
        assert out.code == 0, out.stderr
        [result] = out.json()
        [row] = result["infer"]
        assert row["samples_per_request"] == 4 and row["check"]["agrees"] is True
        # fp32 on Neuron: neuronx-cc casts matmuls to bf16 by default, so the check holds it to bf16's tolerance.
        assert row["check"]["precision"] == "bf16"
        calls = neuronx_calls(neuron_host)
        assert [c["inputs"] for c in calls if c["call"] == "trace"][-1] == inputs
        assert [c for c in calls if c["call"] == "DataParallel.forward"][-1]["inputs"] == inputs
        names = [i["name"] for i in result["model"]["inputs"]]
        assert names == (["input0", "input1"] if "two_tower" in model else ["tokens", "mask"])
def test_traced_inference_of_causal_lms_binds_their_inputs_by_name(run_cli, neuron_host):
    """GPT-2's forward takes past_key_values second: torch_neuronx.trace hands the wrapper (ids, mask) by
    position and the wrapper binds them by name; each core's slice of the batch is checked against eager."""
    models = DATA / "models"
    for name, cls in (("tiny-gpt2", "GPT2LMHeadModel"), ("tiny-llama", "LlamaForCausalLM")):
        out = run_cli("run", "--host", "local", "--workload", "infer", "--backend", "neuron", "--model",
                      f"hf:{models / name}", "--task", "causal-lm", "--seq-lens", "16", "--batch-sizes", "2",
                      "--nproc", "2", "--warmup", "1", "--min-iters", "10", "--duration", "0.1", "--json",
                      env=neuron_host)
        assert out.code == 0, out.stderr
        [result] = out.json()
        assert result["model"]["class"] == cls
        [row] = result["infer"]
        assert row["samples_per_request"] == 4 and row["tokens_per_s"] == pytest.approx(row["throughput_per_s"] * 16)
        check = row["check"]
        assert check["agrees"] is True and check["finite"] and check["precision"] == "bf16"
        assert check["max_abs_err"] < 1e-5  # the stand-in traces in fp32: nothing but the binding could differ
        calls = neuronx_calls(neuron_host)
        traced = [c for c in calls if c["call"] == "trace"][-1]
        assert traced["batch"] == 2 and traced["inputs"] == 2  # input_ids and attention_mask, positionally
        assert [c for c in calls if c["call"] == "DataParallel.forward"][-1]["per_core"] == [2, 2]


def test_a_neuron_inference_has_its_mfu_against_the_neuroncores_peak_beside_neuron_monitors_count(
        run_cli, neuron_host, tmp_path):
    bindir = Path(neuron_host["PATH"].split(os.pathsep)[0])
    (bindir / "neuron-monitor").symlink_to(DOUBLES_BIN / "neuron-monitor")
    env = dict(neuron_host, NEURONBENCH_FAKE_NEURON_MONITOR="neuron-monitor-inf2-xlarge.jsonl",
               NEURONBENCH_FAKE_NEURON_MONITOR_START="6")  # the recording's steady serving: both cores busy
    out = run_cli("run", "--host", "local", "--workload", "infer", "--backend", "neuron", *tiny_model_flags(),
                  "--batch-sizes", "4", "--nproc", "2", "--warmup", "2", "--min-iters", "20", "--duration", "2.5",
                  "--json", env=env)
    assert out.code == 0, out.stderr
    result = out.json()[0]
    row = result["infer"][0]
    assert row["matmul_dtype"] == "bf16"  # an fp32 model: neuronx-cc casts its matmuls to bf16 by default
    basis = row["mfu_basis"]
    assert basis["device"].startswith("NeuronCore-v2") and basis["dtype"] == "bf16" and basis["devices"] == 2
    assert basis["peak_tflops_per_device"] == 95.0 and basis["peak_tflops"] == 190.0  # 190 a chip / 2 cores
    assert row["achieved_tflops"] == pytest.approx(row["flops_per_sample"] * row["throughput_per_s"] / 1e12)
    assert row["mfu"] == pytest.approx(row["achieved_tflops"] / 190.0)
    # neuron-monitor's own count while measuring (the recording's 29-32 TFLOP/s a core), shown beside ours.
    assert basis["monitor_tflops"] == pytest.approx(
        sum(d["flops_mean"] for d in result["telemetry"]["measure"]["devices"]) / 1e12)
    assert 2 * 29 < basis["monitor_tflops"] < 2 * 32.1


def _traced_infer(run_cli, env, *extra: str):
    return run_cli("run", "--host", "local", "--workload", "infer", "--backend", "neuron", *tiny_model_flags(),
                   "--batch-sizes", "2", "--nproc", "2", "--warmup", "1", "--min-iters", "10", "--duration", "0.1",
                   "--json", *extra, env=env)


def test_the_second_traced_run_loads_its_artefact_and_compiler_flags_reach_trace_as_compiler_args(
        run_cli, neuron_host):
    """Four runs on one host: cold; loaded (compile once, load many times); `--neuron-cc-flags --auto-cast none`,
    another artefact, whose flags reach trace as compiler_args (trace never reads NEURON_CC_FLAGS: the flags
    must change the compiled model, not just the report's tolerance and peak); `--no-compile-cache`, cold."""
    first = _traced_infer(run_cli, neuron_host)
    assert first.code == 0, first.stderr
    second = _traced_infer(run_cli, neuron_host)
    assert second.code == 0, second.stderr
    cold, loaded = first.json()[0]["infer"][0]["compile"], second.json()[0]["infer"][0]["compile"]
    assert cold["state"] == "cold" and loaded["state"] == "loaded"
    assert loaded["key"] == cold["key"] and loaded["artefact"] == cold["cached_as"]
    assert len([c for c in neuronx_calls(neuron_host) if c["call"] == "trace"]) == 1  # traced once

    flagged = _traced_infer(run_cli, neuron_host, "--neuron-cc-flags", "--auto-cast none")
    assert flagged.code == 0, flagged.stderr
    [result] = flagged.json()
    traced = [c for c in neuronx_calls(neuron_host) if c["call"] == "trace"][-1]
    assert traced["compiler_args"] == ["--auto-cast", "none"]
    run_dir = Path(traced["compiler_workdir"]).parent
    assert Path(traced["compiler_workdir"]).name == "neuron-compile-bs2" and run_dir.name == result["run_id"]
    assert not Path(traced["compiler_workdir"]).exists()  # kept only when the compile fails
    [row] = result["infer"]
    assert row["check"]["precision"] == "fp32"  # the same flags the compiler got: fp32 matmuls, fp32 tolerance
    assert row["compile"]["compiler_args"] == ["--auto-cast", "none"] and row["compile"]["state"] == "cold"
    assert result["backend_detail"]["stack"] == "xla"
    assert result["backend_detail"]["compiler_flags_via"] == "compiler_args"

    forced = _traced_infer(run_cli, neuron_host, "--no-compile-cache")
    assert forced.json()[0]["infer"][0]["compile"]["state"] == "cold"
    assert len([c for c in neuronx_calls(neuron_host) if c["call"] == "trace"]) == 3


def test_a_graph_that_fails_to_compile_names_the_compilers_line_and_keeps_its_folder(run_cli, neuron_host):
    env = dict(neuron_host, NEURONBENCH_FAKE_NEURONX_FAIL="Unsupported operator aten::foo")
    out = _traced_infer(run_cli, env)
    assert out.code != 0
    [result] = out.json()
    assert result["status"] == "failed" and result["error"]["kind"] == "compile_failed"
    message = result["error"]["message"]
    assert "ERROR 70: Unsupported operator aten::foo" in message
    kept = message.rsplit("kept in ", 1)[1].rstrip(".")
    assert Path(kept).name == "neuron-compile-bs2" and (Path(kept) / "log-neuron-cc.txt").exists()


def test_dynamic_shapes_are_refused_on_neuron_in_one_sentence(run_cli, neuron_host):
    out = _traced_infer(run_cli, neuron_host, "--dynamic-shapes")
    assert out.code != 0
    [result] = out.json()
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"
    assert result["error"]["message"].startswith("--dynamic-shapes cannot run on Neuron")
    assert neuronx_calls(neuron_host) == []
