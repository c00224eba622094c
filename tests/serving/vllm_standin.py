"""A stand-in for a Neuron DLAMI's ``python -m vllm.entrypoints.cli.main serve`` (tests only): the vLLM Neuron
stacks cannot run without NeuronCores.  vLLM itself (its parser, its CPU engine) runs for real in the suite
(tests/vllm_venv.py); this keeps the rules of the two Neuron plugins and refuses, in the real one's words, what
they refuse, then serves the OpenAI API with the mock's set timings.  It does not compile, run a model or hold a
device: its timings are the mock's, not vLLM's.

Rules kept, with where each comes from:

- vLLM 0.16's parser (the NxDI venv's; read from the vllm-0.16.0 wheel): ``--block-size`` is one of
  1, 8, 16, 32, 64, 128, 256 (``CacheConfig.BlockSize``, argparse choices); anything else is argparse's
  "invalid choice".
- The NxDI plugin (vllm-neuron, ``platform.check_and_update_config``): with prefix caching off it sets the
  block size to ``--max-model-len`` itself; with prefix caching on it asserts that a block size was given.
- The NxDI plugin's loader (``NeuronCausalLM.load_weights``) reads the model folder's checkpoint and ignores
  ``--load-format``; a model that is not a folder is downloaded from the hub with its real weights
  (``AutoModelForCausalLM.from_pretrained``), which this stand-in, offline, refuses to pretend.  A folder without
  a checkpoint fails to load.
- vllm-neuron's README (known issue 2): ``--num-gpu-blocks-override`` = ceil(max_model_len / block_size) x
  max_num_seqs is required (an out-of-bounds error otherwise); the stand-in refuses at start what the real one
  would fail on later.
- ``--additional-config`` is JSON; the NxDI plugin reads ``override_neuron_config`` from it (defaults without).
- Both plugins: ``--tensor-parallel-size`` must divide the NeuronCores (``NEURONBENCH_STANDIN_CORES``).
"""
from __future__ import annotations

import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.serving.mock_openai import Handler, Server, Settings

BLOCK_SIZES_0_16 = (1, 8, 16, 32, 64, 128, 256)


def refuse(message: str, kind: str = "ValueError", code: int = 1) -> None:
    print(f"{kind}: {message}", flush=True)
    sys.exit(code)


def read_flags(options: list[str]) -> dict:
    flags: dict = {}
    i = 0
    while i < len(options):
        key = options[i]
        if i + 1 < len(options) and not options[i + 1].startswith("--"):
            flags[key] = options[i + 1]
            i += 2
        else:
            flags[key] = True
            i += 1
    return flags


def nxdi_rules(model: str, flags: dict) -> None:
    block = flags.get("--block-size")
    if block is not None and int(block) not in BLOCK_SIZES_0_16:
        print("usage: vllm serve [model_tag] [options]", flush=True)
        refuse(f"argument --block-size: invalid choice: {block} (choose from "
               f"{', '.join(map(str, BLOCK_SIZES_0_16))})", "vllm serve: error", 2)
    max_len, max_seqs = int(flags["--max-model-len"]), int(flags.get("--max-num-seqs", 256))
    if "--no-enable-prefix-caching" in flags:
        block = max_len  # the plugin's own override: a contiguous KV cache
    elif block is None:
        refuse("When prefix caching is enabled, block_size must be set.", "AssertionError")
    needed = math.ceil(max_len / int(block)) * max_seqs
    override = flags.get("--num-gpu-blocks-override")
    if override is None or int(override) < needed:
        refuse(f"--num-gpu-blocks-override {override} is fewer than ceil(max_model_len / block_size) x "
               f"max_num_seqs = {needed} blocks: NxDI would index out of bounds")
    if not os.path.isdir(model):
        refuse(f"{model} is not a folder: the NxDI plugin would download its real weights from the Hugging Face "
               f"hub (AutoModelForCausalLM.from_pretrained), which this offline stand-in does not do", "OSError")
    if not glob.glob(os.path.join(model, "*.safetensors")) and not glob.glob(os.path.join(model, "*.bin")):
        refuse(f"no checkpoint (*.safetensors or *.bin) in {model}: NxDI loads the folder's weights and does not "
               f"read --load-format {flags.get('--load-format', 'auto')}", "FileNotFoundError")
    print(f"INFO block size {block} (= --max-model-len, prefix caching off), {override} blocks", flush=True)


def main(argv: list[str]) -> None:
    if argv[:3] != ["-m", "vllm.entrypoints.cli.main", "serve"] or len(argv) < 4:
        refuse(f"not a vllm serve command line: {argv[:4]}")
    model, flags = argv[3], read_flags(argv[4:])
    version = os.environ.get("NEURONBENCH_STANDIN_VLLM", "0.16.0")
    extra = json.loads(flags.get("--additional-config", "{}"))
    if version.startswith("0.16"):
        nxdi_rules(model, flags)
        print(f"INFO Retrieved override_neuron_config from additional_config: {extra.get('override_neuron_config')}",
              flush=True)
    cores = int(os.environ.get("NEURONBENCH_STANDIN_CORES", "2"))
    tp = int(flags.get("--tensor-parallel-size", 1))
    if tp > cores or cores % tp:
        refuse(f"tensor parallel size {tp} does not divide {cores} NeuronCores")
    print(f"INFO vLLM {version} stand-in serving {model} on port {flags['--port']} with {flags}", flush=True)
    settings = Settings(float(os.environ.get("NEURONBENCH_STANDIN_TTFT", "0.02")),
                        float(os.environ.get("NEURONBENCH_STANDIN_ITL", "0.004")), model=model)
    httpd = Server((flags["--host"], int(flags["--port"])), type("BoundHandler", (Handler,), {"settings": settings}))
    httpd.daemon_threads = True
    httpd.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
