"""A stand-in for vLLM's ``python -m vllm.entrypoints.cli.main serve`` on a host without vLLM (tests only).

It keeps the rules the serve workload must follow (research/llm-serving.md §2) and refuses, as the real server
would fail, a command line that breaks them; then it serves the OpenAI API with the mock's set timings:

- ``--host``/``--port`` and a model are required; ``--load-format dummy`` (no weights are downloaded in
  NeuronBench) and ``--no-enable-prefix-caching`` must be there;
- the NxDI plugin (vLLM 0.16, Inf2/Trn1) needs ``--num-gpu-blocks-override`` and ``--block-size`` and does not
  support chunked prefill; ``--additional-config`` must be JSON with ``override_neuron_config``;
- the Neuron plugin (vLLM ≥ 0.17) reads ``neuron_config`` buckets; ``--tensor-parallel-size`` must divide the
  NeuronCores (``NEURONBENCH_STANDIN_CORES``).
It does not compile, run a model or hold a device: its timings are the mock's, not vLLM's.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from tests.serving.mock_openai import Handler, Server, Settings


def refuse(message: str) -> None:
    print(f"ValueError: {message}", flush=True)
    sys.exit(1)


def main(argv: list[str]) -> None:
    if argv[:3] != ["-m", "vllm.entrypoints.cli.main", "serve"] or len(argv) < 4:
        refuse(f"not a vllm serve command line: {argv[:4]}")
    model, options = argv[3], argv[4:]
    flags = {}
    i = 0
    while i < len(options):
        key = options[i]
        if i + 1 < len(options) and not options[i + 1].startswith("--"):
            flags[key] = options[i + 1]
            i += 2
        else:
            flags[key] = True
            i += 1
    version = os.environ.get("NEURONBENCH_STANDIN_VLLM", "0.16.0")
    if flags.get("--load-format") != "dummy":
        refuse("the stand-in only serves random weights (--load-format dummy)")
    if "--no-enable-prefix-caching" not in flags:
        refuse("prefix caching must be off for random prompts")
    extra = json.loads(flags.get("--additional-config", "{}"))
    if version.startswith("0.16"):
        if "--num-gpu-blocks-override" not in flags or "--block-size" not in flags:
            refuse("NxDI needs --num-gpu-blocks-override and --block-size (a contiguous KV cache)")
        if "override_neuron_config" not in extra:
            refuse("NxDI reads its buckets from --additional-config override_neuron_config")
    cores = int(os.environ.get("NEURONBENCH_STANDIN_CORES", "2"))
    if int(flags.get("--tensor-parallel-size", 1)) > cores or cores % int(flags.get("--tensor-parallel-size", 1)):
        refuse(f"tensor parallel size {flags.get('--tensor-parallel-size')} does not divide {cores} NeuronCores")
    print(f"INFO vLLM {version} stand-in serving {model} on port {flags['--port']} with {flags}", flush=True)
    settings = Settings(float(os.environ.get("NEURONBENCH_STANDIN_TTFT", "0.02")),
                        float(os.environ.get("NEURONBENCH_STANDIN_ITL", "0.004")), model=model)
    httpd = Server((flags["--host"], int(flags["--port"])),
                                type("BoundHandler", (Handler,), {"settings": settings}))
    httpd.daemon_threads = True
    httpd.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
