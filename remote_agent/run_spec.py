"""The run specification: what to run, sent on the agent's stdin, the same to every host of a comparison.

``RunSpec`` (its fields, their help text for ``--help`` and the GUI's tooltips, and its JSON form),
``NodePlacement`` (one node's place in a multi-node run) and ``parse_run_request`` (what ``agent run`` reads).
The values each field may take are in ``spec_values``; the checks that hold a spec to them in ``spec_checks``.
Part of the wire format (``protocol`` re-exports these names): stdlib only, Python 3.8.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, Optional, Tuple

from remote_agent.model_ref import strip_model_file_text
from remote_agent.spec_checks import validate
from remote_agent.spec_values import (
    ADDRESS,
    DEFAULT_INPUT_LEN,
    DEFAULT_MODEL,
    DEFAULT_OUTPUT_LEN,
    MAX_NODES,
    P99_MIN_REQUESTS,
    RENDEZVOUS_TIMEOUT_S,
    TARGET_CI_MIN_STEPS,
    TELEMETRY_MAX_PERIOD_S,
    TELEMETRY_MIN_PERIOD_S,
    TELEMETRY_PERIOD_S,
    SpecError,
)


def _help(text: str, flag: str = "") -> Dict[str, str]:
    return {"help": text, "flag": flag}


@dataclass(frozen=True)
class RunSpec:
    """What to run: the same spec is sent to every host of a comparison."""

    workload: str = field(default="train", metadata=_help(
        "train: the seed's ViT training loop; infer: compile once, then time requests", "--workload"))
    model: str = field(default=DEFAULT_MODEL, metadata=_help(
        "the model under test: a timm name (vit_base_patch16_224, the seed's ViT), torchvision:NAME, "
        "hf:HUB_ID or hf:LOCAL_CONFIG_DIR (transformers, random weights from the config), or "
        "file:PATH.py[:FUNCTION] (your own file: FUNCTION(batch_size, **model_args) returns "
        "{'model', 'inputs'[, 'loss'][, 'tokens_per_sample']}; a seq_len parameter gets --seq-len)", "--model"))
    model_args: Dict[str, Any] = field(default_factory=dict, metadata=_help(
        "keyword arguments for the model: timm.create_model's (img_size=32 depth=2), torchvision's "
        "get_model's (num_classes=10), config overrides for hf: (num_hidden_layers=4), or your "
        "file's function's", "--model-arg"))
    task: str = field(default="", metadata=_help(
        "hf: models: base (AutoModel), classification, masked-lm or causal-lm (default base)", "--task"))
    seq_lens: Tuple[int, ...] = field(default=(), metadata=_help(
        "sequence length of text models' inputs (default 128, at most the config's maximum); inference "
        "sweeps every length given, one compile per batch size and length", "--seq-len"))
    model_file: Optional[Dict[str, Any]] = field(default=None, metadata=_help(
        "the user's model file or local config as sent to the host: name, sha256 and text"))
    check: bool = field(default=True, metadata=_help(
        "compare every compiled model (and the first training loss) with the eager model on CPU in fp32, "
        "on fresh inputs", "--no-check"))
    backend: str = field(default="auto", metadata=_help(
        "neuron (torch-xla on NeuronCores), xla (any PJRT device), cuda, cpu, or auto: the best present",
        "--backend"))
    batch_sizes: Tuple[int, ...] = field(default=(16,), metadata=_help(
        "per-process batch size; inference sweeps every size given", "--batch-size"))
    steps: int = field(default=100, metadata=_help("training steps in all, warm-up included", "--steps"))
    warmup: int = field(default=10, metadata=_help(
        "steps (training) or requests (inference) run before measuring", "--warmup"))
    duration: float = field(default=5.0, metadata=_help(
        "inference: measure at least this many seconds per batch size", "--duration"))
    min_iters: int = field(default=100, metadata=_help(
        "inference: measure at least this many requests per batch size (p99 needs 100)", "--min-iters"))
    target_ci: Optional[float] = field(default=None, metadata=_help(
        "stop once the 95%% interval is within ±PCT %% (training: of the median step time, after at least "
        "%d steady steps, --steps the cap; inference: of each batch size's throughput, after --min-iters "
        "requests and at least %d (p99 needs them), --duration the cap); 0 or unset: measure the fixed "
        "--steps / --duration" % (TARGET_CI_MIN_STEPS, P99_MIN_REQUESTS),
        "--target-ci"))
    precision: str = field(default="fp32", metadata=_help(
        "fp32, or bf16 by casting the model (XLA_USE_BF16 is deprecated)", "--precision"))
    nproc: int = field(default=1, metadata=_help(
        "processes: torchrun workers for training (one per NeuronCore/GPU); NeuronCores for inference",
        "--nproc"))
    workers: Optional[int] = field(default=None, metadata=_help(
        "DataLoader worker processes per training process (default: from the host's vCPUs and --nproc; "
        "0 on a CPU device, where loader workers compete with the model for the same cores)", "--workers"))
    data: str = field(default="host", metadata=_help(
        "host: the seed's random-image dataset through a DataLoader (measures the input pipeline too); "
        "device: one synthetic batch made on the device and reused (measures the accelerator alone)",
        "--data"))
    seed: int = field(default=0, metadata=_help("random seed (same initial weights on every worker)"))
    neuron_cc_flags: str = field(default="", metadata=_help(
        "flags for neuronx-cc: torch_neuronx.trace's compiler_args (XLA-stack inference), NEURON_CC_FLAGS "
        "(XLA-stack training, the native stack)"))
    stochastic_rounding: bool = field(default=True, metadata=_help(
        "NEURON_RT_STOCHASTIC_ROUNDING_EN=1 (recommended with bf16 on Neuron)"))
    compile_cache: str = field(default="", metadata=_help(
        "Neuron compile cache directory (default /var/tmp/neuron-compile-cache)"))
    telemetry_period: float = field(default=TELEMETRY_PERIOD_S, metadata=_help(
        "seconds between telemetry samples (NeuronCore/GPU utilisation and memory, host CPU and memory), "
        "%g to %g; 0 switches sampling off" % (TELEMETRY_MIN_PERIOD_S, TELEMETRY_MAX_PERIOD_S),
        "--telemetry-period"))
    nnodes: int = field(default=1, metadata=_help(
        "machines one training run spans (torchrun --nnodes); --nproc processes on each", "--nnodes"))
    # ---- LLM workloads (generate, serve): DESIGN.md §11; figures in remote_agent/llm_figures.py
    input_lens: Tuple[int, ...] = field(default=(), metadata=_help(
        "generate/serve: prompt tokens per request (a sweep: 128,512,2048; default %d); each input and "
        "output length pair is one sweep point" % DEFAULT_INPUT_LEN, "--input-lens"))
    output_lens: Tuple[int, ...] = field(default=(), metadata=_help(
        "generate/serve: new tokens every request must produce, exactly (EOS off; default %d)"
        % DEFAULT_OUTPUT_LEN, "--output-lens"))
    concurrency: Tuple[int, ...] = field(default=(), metadata=_help(
        "serve: closed-loop load levels, requests in flight at once (1,2,4,...; default 1,2,4)",
        "--concurrency"))
    server: str = field(default="", metadata=_help(
        "serve: the server the agent starts on the host: transformers (transformers serve, any host) or "
        "vllm (CUDA vLLM on a GPU, vLLM's CPU build on a CPU host, vLLM Neuron where the probe finds it); "
        "default transformers", "--server"))
    server_cmd: str = field(default="", metadata=_help(
        "serve: your own server's command line (llama.cpp, TGI, SGLang...) serving the OpenAI API on the "
        "port the agent passes as {port}", "--server-cmd"))
    endpoint: str = field(default="", metadata=_help(
        "serve: the URL of an OpenAI-compatible server already running, as reached from the host (nothing "
        "is started)", "--endpoint"))
    slo: str = field(default="", metadata=_help(
        "serve: latency objectives every level is held to, e.g. ttft_p99=2000ms,tpot_p99=100ms, or an MLPerf "
        "preset named for its model (mlperf-llama3.1-8b-server, mlperf-llama2-70b-interactive, ...); with it, a "
        "seeded Poisson rate search finds the highest rate that meets them", "--slo"))
    compile: bool = field(default=False, metadata=_help(
        "generate on cuda: the static KV cache and torch.compile of the forward (the transformers recipe); "
        "without it, eager with the dynamic cache (xla and neuron always run static shapes)", "--compile"))
    # ---- Neuron stack: TorchNeuron (native) or torch-xla + trace (issue 22) ----
    neuron_stack: str = field(default="", metadata=_help(
        "native (TorchNeuron: the neuron device, torch.compile; Trn2/Trn3, SDK 2.33+) or xla (torch-xla and "
        "torch_neuronx.trace; Inf2/Trn1, SDK <= 2.31); empty: the stack the host has", "--neuron-stack"))
    neuron_mode: str = field(default="compile", metadata=_help(
        "native stack: compile (torch.compile(backend=\"neuron\", fullgraph=True), static shapes) or eager "
        "(per-op compiles on first use, every shape warmed up before measuring)", "--neuron-mode"))
    compile_cache_reuse: bool = field(default=True, metadata=_help(
        "load a compiled artefact (traced model, NEFF) this host already has; off: compile cold",
        "--no-compile-cache"))
    dynamic_shapes: bool = field(default=False, metadata=_help(
        "compile for dynamic shapes (torch.compile(dynamic=True)): refused on Neuron, whose graphs are static",
        "--dynamic-shapes"))

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch_sizes", tuple(self.batch_sizes))
        object.__setattr__(self, "seq_lens", tuple(self.seq_lens))
        for name in ("input_lens", "output_lens", "concurrency"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "model_args", dict(self.model_args))
        validate(self)

    @property
    def batch_size(self) -> int:
        """The training batch size (per process)."""
        return self.batch_sizes[0]

    @property
    def seq_len(self) -> Optional[int]:
        """The training sequence length (None: the model's default, or a model without one)."""
        return self.seq_lens[0] if self.seq_lens else None

    def to_dict(self) -> Dict[str, Any]:
        data = asdict(self)
        data["batch_sizes"] = list(self.batch_sizes)
        data["seq_lens"] = list(self.seq_lens)
        for name in ("input_lens", "output_lens", "concurrency"):
            data[name] = list(getattr(self, name))
        return data

    def to_event_dict(self) -> Dict[str, Any]:
        """The spec as events and Results carry it: a model file's text stays on the host (its name,
        size and sha256 say which file ran; the app's store keeps the text)."""
        return strip_model_file_text(self.to_dict())

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> RunSpec:
        if not isinstance(data, dict):
            raise SpecError("spec", "the run spec must be a JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise SpecError(unknown[0], "unknown spec field(s): %s" % ", ".join(unknown))
        return cls(**data)

    @classmethod
    def field_help(cls) -> Dict[str, Dict[str, str]]:
        """Help text and CLI flag per field: feeds ``--help`` and GUI tooltips."""
        return {f.name: dict(f.metadata) for f in fields(cls)}


@dataclass(frozen=True)
class NodePlacement:
    """Where one node of a multi-node training run stands: sent to each node's agent beside the RunSpec.

    Every node gets the same ``nnodes``, master address and ports, and its own
    ``node_rank`` (torchrun's static rendezvous); ``name`` is the node as the
    user knows it (a host name), for messages.
    """

    node_rank: int
    nnodes: int
    master_addr: str
    master_port: int
    comm_port: int = 0  # NEURON_RT_ROOT_COMM_ID's port (Neuron's collectives bootstrap); 0: not Neuron
    name: str = ""
    rendezvous_timeout_s: int = RENDEZVOUS_TIMEOUT_S

    def __post_init__(self) -> None:
        def need(ok: bool, message: str) -> None:
            if not ok:
                raise SpecError("node", message)

        need(isinstance(self.nnodes, int) and 2 <= self.nnodes <= MAX_NODES, "nnodes must be 2 to %d" % MAX_NODES)
        need(isinstance(self.node_rank, int) and 0 <= self.node_rank < self.nnodes,
             "node_rank must be between 0 and nnodes - 1, not %r" % (self.node_rank,))
        need(isinstance(self.master_addr, str) and bool(ADDRESS.match(self.master_addr)),
             "master_addr %r is not a host name or address" % (self.master_addr,))
        for name in ("master_port", "comm_port"):
            port = getattr(self, name)
            need(type(port) is int and 0 <= port <= 65535 and (port or name == "comm_port"),
                 "%s must be a port number, not %r" % (name, port))
        need(isinstance(self.rendezvous_timeout_s, int) and self.rendezvous_timeout_s > 0,
             "rendezvous_timeout_s must be a positive number of seconds")
        need(isinstance(self.name, str) and "\n" not in self.name, "name must be one line")

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> NodePlacement:
        if not isinstance(data, dict):
            raise SpecError("node", "the node placement must be a JSON object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise SpecError("node", "unknown node field(s): %s" % ", ".join(unknown))
        return cls(**data)


def parse_run_request(data: Any) -> Tuple[RunSpec, Optional[NodePlacement]]:
    """What ``agent run`` reads on stdin: a RunSpec, or ``{"spec": RunSpec, "node": NodePlacement}``."""
    if isinstance(data, dict) and "spec" in data and isinstance(data.get("spec"), dict):
        node = NodePlacement.from_dict(data["node"]) if data.get("node") is not None else None
        spec = RunSpec.from_dict(data["spec"])
        if node is not None and node.nnodes != spec.nnodes:
            raise SpecError("nnodes", "the node placement says %d nodes, the spec %d" % (node.nnodes, spec.nnodes))
        return spec, node
    return RunSpec.from_dict(data), None
