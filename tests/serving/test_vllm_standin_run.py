"""``--server vllm`` end to end on a host double: an Inf2 (the recorded neuron-ls of an inf2.xlarge, the repo's
neuron-ls test double) with a Neuron DLAMI's NxDI vLLM venv whose Python is a stand-in keeping vLLM 0.16's and the
NxDI plugin's rules (tests/serving/vllm_standin.py): NeuronCores cannot be had here.  The agent reads the venv,
picks the NxDI stack, writes the model's random checkpoint and its command line; the stand-in refuses any line the
real parser or plugin would refuse.  No vLLM runs here: the timings are the mock's (real vLLM runs in
tests/serving/test_vllm_cpu.py)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def fake_vllm_venv(root: Path, version: str) -> Path:
    venv = root / f"aws_neuronx_venv_pytorch_inference_vllm_{version.replace('.', '_')}"
    site = venv / "lib" / "python3.10" / "site-packages"
    for name, ver in (("vllm", version), ("neuronx_distributed_inference", "0.7.0")):
        info = site / f"{name}-{ver}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {ver}\n")
    (venv / "bin").mkdir()
    python = venv / "bin" / "python3"
    python.write_text(f"#!/bin/sh\nexec {sys.executable} {REPO / 'tests' / 'serving' / 'vllm_standin.py'} \"$@\"\n")
    python.chmod(0o755)
    return venv


@pytest.fixture
def inf2_env(tmp_path, cli_env):
    device = tmp_path / "dev" / "neuron0"
    device.parent.mkdir()
    device.write_text("")
    fake_vllm_venv(tmp_path / "opt", "0.16.0")
    tools = tmp_path / "bin"  # neuron-ls's double alone (the doubles' folder has an nvidia-smi too)
    tools.mkdir()
    (tools / "neuron-ls").symlink_to(REPO / "tests" / "doubles" / "bin" / "neuron-ls")
    env = dict(cli_env)
    env.update(PATH=f"{tools}{os.pathsep}{env['PATH']}",
               NEURONBENCH_NEURON_DEVICE_GLOB=str(tmp_path / "dev" / "neuron*"),
               NEURONBENCH_FAKE_NEURON_LS="neuron-ls-inf2-xlarge.json",
               NEURONBENCH_VLLM_VENV_GLOB=str(tmp_path / "opt" / "aws_neuronx_venv_pytorch_inference_vllm*"),
               NEURONBENCH_STANDIN_VLLM="0.16.0", NEURONBENCH_STANDIN_CORES="2")
    return env


def test_vllm_on_inf2_runs_the_nxdi_stack_on_a_random_checkpoint_with_its_block_override(run_cli, inf2_env,
                                                                                         tmp_path):
    assert run_cli("hosts", "add", "inf2box", "--local", "--instance-type", "inf2.xlarge", env=inf2_env).code == 0
    events = tmp_path / "events.jsonl"
    done = run_cli("run", "--host", "inf2box", "--workload", "serve", "--server", "vllm", "--model",
                   "hf:neuronbench/tiny-random-llama", "--input-lens", "16", "--output-lens", "8", "--concurrency",
                   "1,2", "--nproc", "2", "--duration", "0.5", "--min-iters", "8", "--slo",
                   "mlperf-llama3.1-8b-server", "--json", "--events", str(events), env=inf2_env)
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)[0]
    server = result["serve"]["server"]
    # The recorded neuron-ls predates the instance type in its output and IMDS is not there: "neuron", by the venvs
    assert (server["server"], server["stack"], server["vllm"], server["family"]) == ("vllm", "nxdi", "0.16.0",
                                                                                       "neuron")
    argv = server["argv"]
    assert argv[argv.index("--tensor-parallel-size") + 1] == "2"
    assert argv[argv.index("--num-gpu-blocks-override") + 1] == "2"
    # NxDI reads a checkpoint, not --load-format dummy: the agent wrote one, random, and served its folder
    model = Path(argv[4])
    assert model == Path(server["model"]) and sorted(p.name for p in model.glob("*.safetensors")) == [
        "model.safetensors"]
    assert server["weights"] == "random (seed 0), a float32 checkpoint written by the agent"
    assert server["parameters"] == 205_120  # the tiny Llama's: 2 layers, hidden 64, vocabulary 1024
    assert result["serve"]["slo_text"] == "p99 TPOT ≤ 100 ms, p99 TTFT ≤ 2000 ms"
    assert result["cost"]["usd_per_1m_output_tokens"][0]["slo_met"] is True
    assert [e["type"] for e in map(json.loads, events.read_text().splitlines())].count("serve_level") >= 2


def test_a_command_line_vllm_refuses_fails_with_the_servers_own_line(run_cli, inf2_env):
    inf2_env["NEURONBENCH_STANDIN_CORES"] = "1"  # --nproc 2 cannot split over one core
    done = run_cli("run", "--host", "local", "--workload", "serve", "--server", "vllm", "--model",
                   "hf:neuronbench/tiny-random-llama", "--nproc", "2", "--input-lens", "16", "--output-lens", "8",
                   env=inf2_env)
    assert done.code != 0
    assert "the server exited with code 1 during start; its log says: ValueError: tensor parallel size 2 does not " \
           "divide 1 NeuronCores" in done.stderr


def test_the_random_checkpoint_nxdi_loads_is_whole_and_in_the_configs_dtype(tmp_path):
    """What NxDI reads in place of --load-format dummy: every weight of the model, in the config's dtype (an 8B
    Llama is then 16 GB of bfloat16), in shards written one at a time; transformers finds nothing missing."""
    import torch
    import transformers
    from safetensors import safe_open

    from remote_agent.serving.model_folder import write_model_folder, write_random_checkpoint
    from remote_agent.workloads.sources.hf_config import parse_config

    text = (REPO / "resources" / "models" / "neuronbench" / "tiny-random-llama" / "config.json").read_text()
    config = parse_config("tiny", json.dumps(dict(json.loads(text), torch_dtype="bfloat16")), "config.json")
    write_model_folder(config, str(tmp_path), 0, weights=False)
    about = write_random_checkpoint(config, str(tmp_path), seed=0, shard_bytes=100_000)
    shards = sorted(tmp_path.glob("model-*-of-*.safetensors"))
    assert len(shards) > 1 and (tmp_path / "model.safetensors.index.json").is_file()
    with safe_open(str(shards[0]), "pt") as shard:
        assert {shard.get_tensor(name).dtype for name in shard.keys()} == {torch.bfloat16}  # noqa: SIM118
    model, info = transformers.AutoModelForCausalLM.from_pretrained(str(tmp_path), output_loading_info=True)
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    assert about["parameters"] == sum(p.numel() for p in model.parameters()) == 205_120
