"""The native Neuron stack (TorchNeuron, Trn2/Trn3) run end to end on a machine without Neuron.

The host's Python is the suite's second venv (tests/native_venv.py: torch 2.13, the family TorchNeuron
2.13.3.0 is built for) with the TorchNeuron stand-in on its path (tests/doubles/python-native: the neuron
device on the CPU, the neuron torch.compile backend with the real rules); `neuron-ls` replays a trn2.3xlarge
listing (one Trainium2 device, 4 logical NeuronCores at LNC 2) and `/dev/neuron0` is a stand-in file.
Everything else is the product: CLI, agent zipapp, probe, pre-flight, worker, NeuronNativeBackend.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import DATA, DOUBLES_BIN, REPO
from tests.native_venv import native_python, native_vision_python

pytestmark = pytest.mark.slow
NATIVE_STAND_INS = REPO / "tests" / "doubles" / "python-native"
XLA_STAND_INS = REPO / "tests" / "doubles" / "python"
MODEL = ["--model", f"file:{DATA / 'models' / 'two_tower.py'}"]
INFER = ["--workload", "infer", "--backend", "neuron", *MODEL, "--batch-sizes", "2", "--warmup", "1",
         "--min-iters", "10", "--duration", "0.1"]


@pytest.fixture(scope="session")
def native_py() -> Path:
    python, why = native_python()
    if python is None:
        pytest.skip(why)
    return python


@pytest.fixture(scope="session")
def native_vision_py() -> Path:
    python, why = native_vision_python()
    if python is None:
        pytest.skip(why)
    return python


def neuron_env(base: dict[str, str], tmp_path: Path, listing: str, stand_ins: Path, python: Path | str,
               instance_type: str | None = None, name: str = "host") -> dict[str, str]:
    """Variables that dress this computer as a Neuron host: listing, device file, stand-in library, Python."""
    root = tmp_path / name
    (root / "dev").mkdir(parents=True)
    (root / "dev" / "neuron0").write_text("")
    (root / "bin").mkdir()
    (root / "bin" / "neuron-ls").symlink_to(DOUBLES_BIN / "neuron-ls")
    devices = json.loads((DATA / "neuron" / listing).read_text())
    for device in devices:
        device["neuron_processes"] = []
        if instance_type:
            device["instance_type"] = instance_type  # neuron-ls 2.32+ names it in every device object
    (root / "neuron-ls.json").write_text(json.dumps(devices))
    env = dict(base)
    env.update({
        "PATH": f"{root / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}/usr/bin{os.pathsep}/bin",
        "PYTHONPATH": str(stand_ins),
        "NEURONBENCH_LOCAL_PYTHON": str(python),
        "NEURONBENCH_NEURON_DEVICE_GLOB": str(root / "dev" / "neuron*"),
        "NEURONBENCH_FAKE_NEURON_LS": str(root / "neuron-ls.json"),
        "NEURONBENCH_FAKE_NEURON_CORES": str(sum(d["nc_count"] for d in devices)),
        "NEURONBENCH_FAKE_NEURONX_LOG": str(root / "torch_neuronx.log"),
        "NEURONBENCH_FAKE_NEURON_RUNTIMES": str(root / "runtimes"),
        "NEURONBENCH_NEURON_VENV_GLOB": str(root / "no-venvs" / "*"),
    })
    return env


@pytest.fixture
def native_host(cli_env, tmp_path, native_py) -> dict[str, str]:
    return neuron_env(cli_env, tmp_path, "neuron-ls-trn2-3xlarge.json", NATIVE_STAND_INS, native_py)


def calls(env: dict[str, str]) -> list[dict]:
    log = Path(env["NEURONBENCH_FAKE_NEURONX_LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_native_inference_over_two_cores_then_warm_then_forced_cold(run_cli, native_host):
    """Three runs on one host (each assertion here once, not a run per test):

    1. ``--nproc 2``: one process per logical core, each pinned with NEURON_RT_VISIBLE_CORES; the lead compiles,
       the other loads its NEFF from the host's cache; every process's requests are merged; neuron-monitor's
       runtimes are attributed to the run's own two processes (the double replays a two-runtime report, each
       recorded runtime taken over by the live process on its core);
    2. one process: the graph is served warm from the NEFF cache pinned per host (not per run);
    3. ``--no-compile-cache``: cold again.
    """
    bindir = Path(native_host["PATH"].split(os.pathsep)[0])
    (bindir / "neuron-monitor").symlink_to(DOUBLES_BIN / "neuron-monitor")
    env = dict(native_host, NEURONBENCH_FAKE_NEURON_MONITOR_START="20")  # the recording's steady state
    first = run_cli("run", "--host", "local", *INFER, "--nproc", "2", "--duration", "1.5", "--telemetry-period",
                    "0.25", "--json", env=env)
    assert first.code == 0, first.stderr
    [result] = first.json()
    assert result["status"] == "ok" and result["backend"] == "neuron"
    env_probe, detail = result["env"], result["backend_detail"]
    assert env_probe["neuron_stack"] == "native" and env_probe["torch"].startswith("2.13")
    assert env_probe["neuron_stack_detail"]["logical_cores"] == 4 and env_probe["neuron_stack_detail"]["lnc"] == 2
    assert detail["stack"] == "native" and detail["mode"] == "compile" and detail["torch"].startswith("2.13")
    assert detail["torch_neuronx"] == "2.13.3.0+testdouble" and detail["fallback_ops"] == []
    assert detail["visible_cores"] == "0" and detail["logical_cores"] == 1  # the lead sees its own core only
    [row] = result["infer"]
    cold = row["compile"]
    assert cold["state"] == "cold" and cold["graphs"] == 1 and cold["new_neffs"] == 1
    # From TorchNeuron's NeuronCompilationMetrics objects, not the first call's gap.
    assert cold["measured_by"] == "torch.neuron.get_dynamo_metrics" and cold["seconds_backend"] > 0
    assert row["check"]["agrees"] is True
    per_process = row["data_parallel"]["per_process"]
    assert row["data_parallel"]["processes"] == 2
    assert [p["core"] for p in per_process] == ["0", "1"] and len({p["pid"] for p in per_process}) == 2
    assert [p["compile_state"] for p in per_process] == ["cold", "warm"]
    assert row["iterations"] == sum(p["requests"] for p in per_process)
    assert min(p["requests"] for p in per_process) >= 10
    measure = result["telemetry"]["measure"]
    assert measure["run_cores"] == [0, 1] and measure["other_processes"] == []
    assert [d["held_by"] for d in measure["devices"]] == ["run", "run"]
    assert "runtime" not in result["telemetry"]["missing"]

    second = run_cli("run", "--host", "local", *INFER, "--json", env=native_host)
    [again] = second.json()
    warm = again["infer"][0]["compile"]
    assert warm["state"] == "warm" and warm["new_neffs"] == 0 and warm["neff_cache"] == cold["neff_cache"]
    assert again["backend_detail"]["logical_cores"] == 4 and again["infer"][0]["data_parallel"] is None
    forced = run_cli("run", "--host", "local", *INFER, "--no-compile-cache", "--json", env=native_host)
    assert forced.json()[0]["infer"][0]["compile"]["state"] == "cold"
    compiles = [c for c in calls(native_host) if c["call"] == "compile"]
    assert [(c["visible_cores"], c["cache_hit"]) for c in compiles] == [
        ("0", False), ("1", True), (None, True), (None, False)]


def test_hugging_face_models_compile_whole_on_the_native_stack(run_cli, native_host):
    """GPT-2 and BERT inference and Llama training, each one fullgraph torch.compile graph on torch 2.13."""
    models = DATA / "models"
    for workload, name, task, args in (
            ("infer", "tiny-gpt2", "causal-lm", ["--batch-sizes", "2", "--warmup", "1", "--min-iters", "10",
                                                 "--duration", "0.1"]),
            ("infer", "tiny-bert", "classification", ["--batch-sizes", "2", "--warmup", "1", "--min-iters", "10",
                                                      "--duration", "0.1"]),
            ("train", "tiny-llama", "causal-lm", ["--batch-size", "2", "--steps", "6", "--warmup", "2",
                                                  "--workers", "0"])):
        out = run_cli("run", "--host", "local", "--workload", workload, "--backend", "neuron", "--model",
                      f"hf:{models / name}", "--task", task, "--seq-len" if workload == "train" else "--seq-lens",
                      "16", *args, "--json", env=native_host)
        assert out.code == 0, out.stderr
        [result] = out.json()
        part = result["train"] if workload == "train" else result["infer"][0]
        assert part["compile"]["graphs"] == 1 and part["compile"]["state"] == "cold", (name, part["compile"])
        assert part["check"]["agrees"] is True, name


def test_native_eager_mode_measures_the_first_call_gap_and_says_so(run_cli, native_host):
    out = run_cli("run", "--host", "local", *INFER, "--neuron-mode", "eager", "--json", env=native_host)
    assert out.code == 0, out.stderr
    compile_block = out.json()[0]["infer"][0]["compile"]
    assert compile_block["how"] == "eager (per-op compiles)" and compile_block["graphs"] == 0
    assert compile_block["measured_by"].startswith("first-call gap")


def test_native_training_over_two_cores_in_bf16_with_flags_through_neuron_cc_flags(run_cli, native_host):
    """torchrun, one process per logical core in the neuron process group, bf16, and --neuron-cc-flags through
    NEURON_CC_FLAGS (the native path's channel) to every rank's compile; compile time from the library's metrics."""
    out = run_cli("run", "--host", "local", "--workload", "train", "--backend", "neuron", *MODEL, "--batch-size", "4",
                  "--steps", "12", "--warmup", "2", "--workers", "0", "--nproc", "2", "--precision", "bf16",
                  "--neuron-cc-flags", "--auto-cast none", "--json", env=native_host)
    assert out.code == 0, out.stderr
    [result] = out.json()
    train = result["train"]
    assert train["world_size"] == 2 and train["global_batch"] == 8
    assert train["compile"]["state"] == "cold" and train["compile"]["steps"] == [1]
    # Before TorchNeuron's metric objects were read, training said 0 s here.
    assert train["compile"]["measured_by"] == "torch.neuron.get_dynamo_metrics" and train["compile"]["seconds"] > 0
    assert train["check"]["agrees"] is True and train["throughput_samples_per_s"] > 0
    assert result["backend_detail"]["compiler_flags_via"] == "NEURON_CC_FLAGS"
    groups = [c for c in calls(native_host) if c["call"] == "process_group"]
    assert sorted((c["rank"], c["world"], c["visible_cores"]) for c in groups) == [(0, 2, "0"), (1, 2, "1")]
    assert len({c["pid"] for c in groups}) == 2  # one process per logical core
    compiled = [c for c in calls(native_host) if c["call"] == "compile"]
    assert {c["neuron_cc_flags"] for c in compiled} == {"--auto-cast none"} and len(compiled) == 2


def test_ops_that_fell_back_to_the_cpu_are_named_and_warned_about(run_cli, native_host):
    env = dict(native_host, NEURONBENCH_FAKE_NEURON_FALLBACK="aten::mul")
    out = run_cli("run", "--host", "local", *INFER, "--json", env=env)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["backend_detail"]["fallback_ops"] == ["aten::mul"]
    assert result["infer"][0]["compile"]["fallback_ops"] == ["aten::mul"]
    assert any("fell back to the host CPU" in w and "aten::mul" in w for w in result["warnings"])
    text = run_cli("runs", "show", result["run_id"], env=env)
    assert "fell back to the host CPU" in text.stdout
    compared = run_cli("compare", result["run_id"], env=env)
    assert "native, cold !" in compared.stdout
    assert f"warning: {result['run_id']} ran 1 op(s) on the host CPU, not the NeuronCore (aten::mul)" in compared.stdout


def test_a_model_whose_ops_all_fell_back_is_refused(run_cli, native_host):
    env = dict(native_host, NEURONBENCH_FAKE_NEURON_FALLBACK="*")
    out = run_cli("run", "--host", "local", *INFER, "--json", env=env)
    assert out.code != 0
    [result] = out.json()
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"
    assert "nothing ran on the NeuronCore" in result["error"]["message"]


def test_a_native_graph_that_fails_to_compile_says_the_compilers_own_cause(run_cli, native_host):
    """TorchNeuron runs neuronx-cc in a temporary folder of its own and raises with its stderr: the sentence
    carries the compiler's line, not only its exit status."""
    out = run_cli("run", "--host", "local", *INFER, "--json",
                  env=dict(native_host, NEURONBENCH_FAKE_NEURONX_FAIL="Unsupported operator aten::foo"))
    assert out.code != 0
    [result] = out.json()
    assert result["error"]["kind"] == "compile_failed"
    assert result["error"]["message"].endswith(
        "neuronx-cc could not compile the model (bs2): [ERROR] [NCC_EVRF009] Unsupported operator aten::foo")


def test_native_on_an_inf2_is_refused_in_one_sentence(run_cli, cli_env, tmp_path, native_py):
    env = neuron_env(cli_env, tmp_path, "neuron-ls-inf2-xlarge.json", NATIVE_STAND_INS, native_py, "inf2.xlarge")
    out = run_cli("run", "--host", "local", *INFER, "--neuron-stack", "native", "--json", env=env)
    assert out.code != 0
    [result] = out.json()
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"
    assert result["error"]["message"].startswith("--neuron-stack native needs Trn2 or Trn3")
    assert "inf2.xlarge" in result["error"]["message"] and "--neuron-stack xla" in result["error"]["message"]
    assert [c for c in calls(env) if c["call"] == "compile"] == []


def test_a_native_host_whose_torch_and_torch_neuronx_families_differ_is_refused(run_cli, cli_env, tmp_path):
    # This suite's main Python has torch 2.9: TorchNeuron 2.13.3.0 beside it cannot run.
    env = neuron_env(cli_env, tmp_path, "neuron-ls-trn2-3xlarge.json", NATIVE_STAND_INS, sys.executable)
    out = run_cli("run", "--host", "local", *INFER, "--json", env=env)
    assert out.code != 0
    [result] = out.json()
    assert result["error"]["kind"] == "bad_spec"
    assert result["error"]["message"].startswith(
        "torch-neuronx 2.13.3.0+testdouble is built for torch 2.13 but this Python has torch 2.9")
    assert "install torch==2.13.*" in result["error"]["message"]


def test_native_generate_runs_on_the_neuron_device_with_a_static_cache_and_names_its_stack(run_cli, native_host):
    """generate on TorchNeuron: the forward compiled with the neuron backend, every row held to N tokens, the
    Result names the native stack and its compile (cold, then warm from the host's NEFF cache)."""
    models = DATA / "models"
    spec = ["run", "--host", "local", "--workload", "generate", "--backend", "neuron", "--model",
            f"hf:{models / 'tiny-llama'}", "--task", "causal-lm", "--batch-sizes", "2", "--input-lens", "8",
            "--output-lens", "4", "--warmup", "1", "--min-iters", "3", "--duration", "0.1", "--json"]
    states = []
    for _ in range(2):
        out = run_cli(*spec, env=native_host)
        assert out.code == 0, out.stderr
        [result] = out.json()
        [point] = result["generate"]
        assert result["status"] == "ok" and result["backend"] == "neuron"
        assert point["stack"].startswith("TorchNeuron (native)") and point["cache"] == "static"
        assert point["calls"] >= 3 and point["ttft_ms"]["p50"] > 0 and point["tpot_ms"]["p50"] > 0
        assert point["fallback_ops"] == []
        states.append(point["compile_state"])
    assert states == ["cold", "warm"]
    compiled = [c for c in calls(native_host) if c.get("call") == "compile"]
    assert compiled, "the forward went through the neuron torch.compile backend"


TINY_VIT = ["--model", "vit_tiny_patch16_224", "--model-arg", "img_size=32", "--model-arg", "patch_size=8",
            "--model-arg", "depth=2", "--model-arg", "embed_dim=64", "--model-arg", "num_heads=2"]


def test_timm_training_and_torchvision_inference_compile_whole_on_the_native_stack(
        run_cli, cli_env, tmp_path, native_vision_py):
    """timm and torchvision on torch 2.13 (tests/native_venv.py says how torchvision gets there); and the one
    sentence a host gets whose torchvision was built for another torch (PyPI's CUDA build beside torch+cpu)."""
    host = neuron_env(cli_env, tmp_path, "neuron-ls-trn2-3xlarge.json", NATIVE_STAND_INS, native_vision_py)
    trained = run_cli("run", "--host", "local", "--workload", "train", "--backend", "neuron", *TINY_VIT,
                      "--batch-size", "2", "--steps", "4", "--warmup", "1", "--workers", "0", "--json", env=host)
    assert trained.code == 0, trained.stderr
    train = trained.json()[0]["train"]
    assert train["compile"]["graphs"] == 1 and train["compile"]["state"] == "cold" and train["check"]["agrees"]
    infer = ["run", "--host", "local", "--workload", "infer", "--backend", "neuron", "--model", "torchvision:resnet18",
             "--batch-sizes", "2", "--warmup", "1", "--min-iters", "5", "--duration", "0.1", "--json"]
    inferred = run_cli(*infer, env=host)
    assert inferred.code == 0, inferred.stderr
    [result] = inferred.json()
    assert result["model"]["libraries"]["torchvision"].startswith("0.28.0")
    [row] = result["infer"]
    assert row["compile"]["graphs"] == 1 and row["check"]["agrees"] is True
    mismatched = run_cli(*infer, env=dict(host, NEURONBENCH_TEST_NO_TORCHVISION_SCHEMA="1"))
    assert mismatched.code != 0
    [failed] = mismatched.json()
    assert failed["error"]["kind"] == "bad_spec"
    message = failed["error"]["message"]
    assert message.startswith("torchvision 0.28.0+cu130 does not load beside torch 2.13.0+cpu (")
    assert message.endswith("pip install torchvision==0.28.* --index-url https://download.pytorch.org/whl/cpu")
