"""Protocol v1: the one wire format between the agent and the app (DESIGN.md §3).

The agent writes JSON Lines on stdout, one event per line, at most
``MAX_LINE_BYTES`` a line.  Every event carries ``v``, ``seq`` (1, 2, 3, ...
strictly increasing within a run), ``t`` (unix seconds) and ``type``.

This module is imported by both sides, so it is stdlib-only and Python 3.8
compatible.  The run specification the app sends on the agent's stdin lives
here too (``RunSpec``): it is part of the wire format.
"""
from __future__ import annotations

import json
import math
import re
import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, Iterable, Optional, Tuple

from remote_agent.event_schema import EVENT_SCHEMAS, SchemaError, check_event
from remote_agent.model_ref import (
    TASKS,
    ModelRefError,
    check_model_file,
    parse_model_ref,
    served_model_id,
    strip_model_file_text,
)
from remote_agent.spec_limits import wire_problem

PROTOCOL_VERSION = 1
MAX_LINE_BYTES = 1 << 20
# Long free text (tracebacks, stderr tails) is capped well below the line cap so
# that one event never has to be cut in the middle of its structure.
MAX_DETAIL_CHARS = 16000

PHASES = ("setup", "compile", "warmup", "measure", "teardown")
ERROR_KINDS = ("bad_spec", "backend_unavailable", "compile_failed", "oom", "runtime", "internal")
END_STATUSES = ("ok", "failed", "cancelled", "partial")

# Every event type's fields, in one table: remote_agent/event_schema.py (decode holds each line to it).
EVENT_TYPES = tuple(EVENT_SCHEMAS)


RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,79}$")


def new_run_id() -> str:
    """Sortable and unique: UTC time plus 6 random hex digits."""
    import secrets  # here, not at the top: every agent start imports this module, few make run ids

    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def check_run_id(run_id: str) -> str:
    """A run id becomes a directory name on the host: no separators, no dot-dot."""
    if not RUN_ID_PATTERN.match(run_id or "") or ".." in run_id:
        raise ValueError("run id %r is not valid (letters, digits, _ . - only, at most 80)" % (run_id,))
    return run_id


class ProtocolError(ValueError):
    """A line that is not a valid protocol v1 event, or an out-of-order stream."""


def finite(value: Any) -> Any:
    """NaN and infinity are not JSON: a metric that is not a number is missing (null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def make_event(type_: str, seq: int, t: Optional[float] = None, **payload: Any) -> Dict[str, Any]:
    """Build an event dict with the common header fields first."""
    if type_ not in EVENT_SCHEMAS:
        raise ProtocolError("unknown event type %r" % (type_,))
    event = {"v": PROTOCOL_VERSION, "seq": seq, "t": time.time() if t is None else t, "type": type_}
    event.update(payload)
    return event


def _cap_text(event: Dict[str, Any], limit: int) -> Dict[str, Any]:
    """Shorten the free-text fields of an event, keeping their ends (where errors are)."""
    capped = dict(event)
    for key in ("detail", "message"):
        value = capped.get(key)
        if isinstance(value, str) and len(value) > limit:
            capped[key] = "[... %d characters cut ...]\n" % (len(value) - limit) + value[-limit:]
    return capped


def encode(event: Dict[str, Any]) -> bytes:
    """Serialise one event to a UTF-8 line ending in ``\\n``.

    Free text is cut to ``MAX_DETAIL_CHARS`` (keeping the tail, where a traceback
    ends).  An event that is still larger than the line cap is a bug in the
    caller and raises ``ProtocolError`` rather than being silently mangled.
    """
    line = json.dumps(finite(_cap_text(event, MAX_DETAIL_CHARS)), ensure_ascii=False,
                      separators=(",", ":"), allow_nan=False)
    data = (line + "\n").encode("utf-8")
    if len(data) > MAX_LINE_BYTES:
        raise ProtocolError("event %s #%s is %d bytes, over the %d-byte line cap"
                            % (event.get("type"), event.get("seq"), len(data), MAX_LINE_BYTES))
    return data


def decode(line: Any) -> Dict[str, Any]:
    """Parse one line and hold it to its type's schema (``event_schema``).

    Raises ``ProtocolError`` with the reason for anything else: a line that is not
    JSON (cut by a full disk, say), nests too deep, or carries a field of the wrong
    type, a NaN, an integer past 64 bits or a lone surrogate.  The caller decides
    whether a refused line ends the stream (``EventStream`` goes on past it).
    """
    if isinstance(line, str):
        line = line.encode("utf-8", "surrogatepass")  # a lone surrogate then fails as invalid UTF-8, below
    if len(line) > MAX_LINE_BYTES:
        raise ProtocolError("line of %d bytes exceeds the %d-byte cap" % (len(line), MAX_LINE_BYTES))
    try:
        event = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        snippet = line[:120].decode("utf-8", "replace").rstrip()
        raise ProtocolError("not a JSON event: %s (line starts %r)" % (exc, snippet)) from None
    except RecursionError:
        raise ProtocolError("not a JSON event: it nests deeper than this reader follows") from None
    try:
        check_event(event, line)
    except SchemaError as exc:
        raise ProtocolError(str(exc)) from None
    return event


class SeqTracker:
    """Checks that a stream's ``seq`` strictly increases and that ``hello`` comes first."""

    def __init__(self) -> None:
        self.last_seq = 0
        self.saw_hello = False

    def check(self, event: Dict[str, Any]) -> None:
        if not self.saw_hello:
            if event["type"] != "hello":
                raise ProtocolError("the first event must be hello, got %s" % event["type"])
            self.saw_hello = True
        elif event["seq"] <= self.last_seq:
            raise ProtocolError("seq went from %d to %d" % (self.last_seq, event["seq"]))
        self.last_seq = event["seq"]


# --------------------------------------------------------------------------- run spec

WORKLOADS = ("train", "infer", "generate", "serve")
# serve: how the inference server is had (the user's own command line is --server-cmd, a running one --endpoint).
SERVERS = ("transformers", "vllm")
# The LLM workloads' default shape when none is asked for (prompt tokens in, new tokens out).
DEFAULT_INPUT_LEN = 128
DEFAULT_OUTPUT_LEN = 128
MAX_CONCURRENCY = 4096
# serve: the model when none is named, the tiny random Llama whose config ships (resources/models/).
DEFAULT_SERVE_MODEL = "hf:neuronbench/tiny-random-llama"
BACKENDS = ("auto", "neuron", "xla", "cuda", "cpu")
PRECISIONS = ("fp32", "bf16")
DATA_SOURCES = ("host", "device")
NEURON_STACKS = ("", "native", "xla")  # "": the stack the host has (issue 22)
NEURON_MODES = ("compile", "eager")
MAX_NODES = 1024
DEFAULT_MODEL = "vit_base_patch16_224"
# Telemetry sampling period (seconds): neuron-top's default cadence, and the fastest
# that neuron-monitor and /proc tick counts (100 Hz) still read meaningfully.
TELEMETRY_PERIOD_S = 1.0
TELEMETRY_MIN_PERIOD_S = 0.2
TELEMETRY_MAX_PERIOD_S = 60.0
MAX_SEQ_LEN = 1 << 20
# --target-ci: the fewest steady training steps a stop may rest on (a median of fewer is not one to trust),
# and the loosest target that still means something.
TARGET_CI_MIN_STEPS = 30
# The fewest requests a p99 is read from (one request in a hundred is its whole tail): a --target-ci stop of
# an inference batch size waits for them even when --min-iters asks for fewer.
P99_MIN_REQUESTS = 100
TARGET_CI_MAX_PCT = 50.0
_MODEL_ARG_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# A DNS name, IPv4 or IPv6 address (no spaces, no shell or URL syntax): torchrun's --master_addr.
_ADDRESS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:%_\-]{0,252}$")


class SpecError(ValueError):
    """An invalid run specification; ``field`` names the offending field."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


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
        self.validate()

    def validate(self) -> None:
        def need(ok: bool, name: str, message: str) -> None:
            if not ok:
                raise SpecError(name, message)

        def is_int(value: Any) -> bool:
            return isinstance(value, int) and not isinstance(value, bool)

        # First: what the events could not carry (and the checks below would recurse into) is refused here.
        problem = wire_problem({f.name: getattr(self, f.name) for f in fields(self)})
        if problem:
            raise SpecError(*problem)
        need(self.workload in WORKLOADS, "workload",
             "workload must be one of %s, not %r" % (", ".join(WORKLOADS), self.workload))
        # serve of a running server (--endpoint, --server-cmd): --model is its model id as it names it, any string
        served = served_model_id(self.model) if self.workload == "serve" and (self.endpoint or self.server_cmd) \
            else None
        try:
            ref = served or parse_model_ref(self.model)
        except ModelRefError as exc:
            raise SpecError("model", str(exc)) from None
        need(self.task == "" or self.task in TASKS, "task",
             "task must be one of %s, not %r" % (", ".join(TASKS), self.task))
        need(self.task == "" or ref.source == "hf", "task",
             "task applies to hf: models only (%s builds its own head)" % ref.source)
        for length in self.seq_lens:
            need(is_int(length) and 1 <= length <= MAX_SEQ_LEN, "seq_lens",
                 "sequence length must be a positive integer, not %r" % (length,))
        need(len(set(self.seq_lens)) == len(self.seq_lens), "seq_lens",
             "sequence lengths repeat: %s" % ",".join(str(n) for n in self.seq_lens))
        need(not self.seq_lens or ref.source in ("hf", "file"), "seq_lens",
             "seq len applies to text models; %s has no sequence length (its inputs are images)" % self.model)
        if self.workload == "train":
            need(len(self.seq_lens) <= 1, "seq_lens",
                 "training takes one sequence length per run, got %s" % ",".join(str(n) for n in self.seq_lens))
        need(isinstance(self.check, bool), "check", "check must be true or false")
        try:
            check_model_file(self.model_file, ref.source)
        except ModelRefError as exc:
            raise SpecError("model_file", str(exc)) from None
        need(self.backend in BACKENDS, "backend",
             "backend must be one of %s, not %r" % (", ".join(BACKENDS), self.backend))
        need(self.precision in PRECISIONS, "precision",
             "precision must be fp32 or bf16, not %r" % (self.precision,))
        need(len(self.batch_sizes) > 0, "batch_sizes", "give at least one batch size")
        for size in self.batch_sizes:
            need(is_int(size) and size > 0, "batch_sizes", "batch size must be a positive integer, not %r"
                 % (size,))
        need(len(set(self.batch_sizes)) == len(self.batch_sizes), "batch_sizes",
             "batch sizes repeat: %s" % ",".join(str(b) for b in self.batch_sizes))
        if self.workload == "train":
            need(len(self.batch_sizes) == 1, "batch_sizes",
                 "training takes one batch size per run, got %s (sweep with inference, or run once per size)"
                 % ",".join(str(b) for b in self.batch_sizes))
        need(is_int(self.warmup) and self.warmup >= 0, "warmup", "warmup must be 0 or more, not %r"
             % (self.warmup,))
        need(is_int(self.steps) and self.steps > 0, "steps", "steps must be a positive integer, not %r"
             % (self.steps,))
        if self.workload == "train":
            need(self.steps > self.warmup, "steps",
                 "steps (%d) must be greater than warmup (%d): no step would be measured"
                 % (self.steps, self.warmup))
        need(isinstance(self.duration, (int, float)) and not isinstance(self.duration, bool)
             and math.isfinite(self.duration) and self.duration > 0, "duration",
             "duration must be a positive number of seconds, not %r" % (self.duration,))
        need(is_int(self.min_iters) and self.min_iters > 0, "min_iters",
             "min_iters must be a positive integer, not %r" % (self.min_iters,))
        _check_target_ci(self)
        need(is_int(self.nproc) and 1 <= self.nproc <= 256, "nproc",
             "nproc must be between 1 and 256, not %r" % (self.nproc,))
        need(self.workers is None or (is_int(self.workers) and 0 <= self.workers <= 64), "workers",
             "workers must be between 0 and 64, not %r" % (self.workers,))
        need(self.data in DATA_SOURCES, "data",
             "data must be one of %s, not %r" % (", ".join(DATA_SOURCES), self.data))
        need(is_int(self.seed), "seed", "seed must be an integer")
        need(isinstance(self.model_args, dict), "model_args", "model_args must be a mapping")
        for key, value in self.model_args.items():
            need(isinstance(key, str) and bool(_MODEL_ARG_KEY.match(key)), "model_args",
                 "model argument name %r is not a Python identifier" % (key,))
            need(_is_json_literal(value), "model_args",
                 "model argument %s=%r is not a number, string, boolean, null or list of those" % (key, value))
        need(isinstance(self.neuron_cc_flags, str) and "\n" not in self.neuron_cc_flags, "neuron_cc_flags",
             "neuron_cc_flags must be one line of text")
        need(isinstance(self.compile_cache, str) and "\n" not in self.compile_cache, "compile_cache",
             "compile_cache must be a path")
        need(check_telemetry_period(self.telemetry_period, allow_off=True) is None, "telemetry_period",
             "telemetry_period %s" % check_telemetry_period(self.telemetry_period, allow_off=True))
        need(is_int(self.nnodes) and 1 <= self.nnodes <= MAX_NODES, "nnodes",
             "nnodes must be between 1 and %d, not %r" % (MAX_NODES, self.nnodes))
        if self.nnodes > 1:
            need(self.workload == "train", "nnodes",
                 "a run spans several nodes for training only; inference runs on one node (--nnodes 1)")
        need(self.neuron_stack in NEURON_STACKS, "neuron_stack",
             "neuron_stack must be native or xla, not %r" % (self.neuron_stack,))
        need(self.neuron_mode in NEURON_MODES, "neuron_mode",
             "neuron_mode must be compile or eager, not %r" % (self.neuron_mode,))
        need(isinstance(self.compile_cache_reuse, bool), "compile_cache_reuse", "compile_cache_reuse must be true "
             "or false")
        need(isinstance(self.dynamic_shapes, bool), "dynamic_shapes", "dynamic_shapes must be true or false")
        if self.neuron_stack:
            need(self.backend in ("auto", "neuron"), "neuron_stack",
                 "neuron_stack %s applies to the neuron backend, not %s" % (self.neuron_stack, self.backend))
        self._validate_llm(need, is_int)

    def _validate_llm(self, need: Any, is_int: Any) -> None:
        """The LLM workloads' fields: positive, unique lengths and levels; one way to have a server."""
        for name in ("input_lens", "output_lens", "concurrency"):
            values = getattr(self, name)
            readable = name.replace("_", " ")
            limit = MAX_CONCURRENCY if name == "concurrency" else MAX_SEQ_LEN
            for value in values:
                need(is_int(value) and 1 <= value <= limit, name,
                     "%s must be positive integers up to %d, not %r" % (readable, limit, value))
            need(len(set(values)) == len(values), name,
                 "%s repeat: %s" % (readable, ",".join(str(v) for v in values)))
            if values:
                need(self.workload in ("generate", "serve") and (name != "concurrency" or self.workload == "serve"),
                     name, "%s applies to the %s workload, not %s" % (
                         readable, "serve" if name == "concurrency" else "generate and serve", self.workload))
        for name in ("server", "server_cmd", "endpoint", "slo"):
            value = getattr(self, name)
            need(isinstance(value, str) and "\n" not in value, name, "%s must be one line of text" % name)
            if value:
                need(self.workload == "serve", name, "%s applies to the serve workload, not %s"
                     % (name.replace("_", " "), self.workload))
        need(self.server == "" or self.server in SERVERS, "server",
             "server must be one of %s, not %r" % (", ".join(SERVERS), self.server))
        ways = [name for name in ("server", "server_cmd", "endpoint") if getattr(self, name)]
        if self.workload == "generate":
            need(self.task in ("", "causal-lm"), "task",
                 "generate needs a causal language model: --task %s builds no language-model head to generate "
                 "with; use --task causal-lm (a decoder such as Llama, Mistral or GPT-2)" % self.task)
        need(self.compile is False or self.compile is True, "compile", "compile must be true or false")
        need(not self.compile or self.workload == "generate", "compile",
             "--compile applies to the generate workload, not %s" % self.workload)
        need(len(ways) <= 1, ways[-1] if ways else "server",
             "give one of server, server cmd or endpoint, not %s" % " and ".join(w.replace("_", " ") for w in ways))

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


RENDEZVOUS_TIMEOUT_S = 300


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
        need(isinstance(self.master_addr, str) and bool(_ADDRESS.match(self.master_addr)),
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


def _check_target_ci(spec: RunSpec) -> None:
    """--target-ci: off (None or 0), or a percentage the steps left after warm-up can reach."""
    pct = spec.target_ci
    if pct is None or (pct == 0 and not isinstance(pct, bool)):
        return
    if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not math.isfinite(pct) \
            or not 0 < pct <= TARGET_CI_MAX_PCT:
        raise SpecError("target_ci", "target_ci must be a percentage above 0 and at most %g (e.g. 2 for ±2 %%), "
                                     "not %r" % (TARGET_CI_MAX_PCT, pct))
    if spec.workload == "train" and spec.steps - spec.warmup < TARGET_CI_MIN_STEPS:
        raise SpecError("target_ci", "target_ci %g: steps (%d) leaves %d after warmup (%d), and a stop rests on at "
                                     "least %d steady steps; raise steps, the most it may run"
                        % (pct, spec.steps, spec.steps - spec.warmup, spec.warmup, TARGET_CI_MIN_STEPS))


def check_telemetry_period(period: Any, allow_off: bool = False) -> Optional[str]:
    """What is wrong with a sampling period (the end of a sentence), or None if it is usable."""
    if isinstance(period, bool) or not isinstance(period, (int, float)) or not math.isfinite(period):
        return "must be a number of seconds, not %r" % (period,)
    if allow_off and period == 0:
        return None
    if not TELEMETRY_MIN_PERIOD_S <= period <= TELEMETRY_MAX_PERIOD_S:
        return "must be between %g and %g seconds%s, not %g" % (
            TELEMETRY_MIN_PERIOD_S, TELEMETRY_MAX_PERIOD_S, " (or 0: off)" if allow_off else "", period)
    return None


def _is_json_literal(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_is_json_literal(v) for v in value)
    return False


def iter_events(lines: Iterable[Any]) -> Iterable[Dict[str, Any]]:
    """Decode a stream of lines, checking hello-first and strictly increasing seq."""
    tracker = SeqTracker()
    for line in lines:
        if not line.strip():
            continue
        event = decode(line)
        tracker.check(event)
        yield event
