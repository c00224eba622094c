"""Whether a run spec can run: each field against the values it may take, then the rules across fields.

The field-by-field checks are tables (a field's choices, its flags, its counts, its one-line texts), so a new
field is one row and every message of a kind reads alike; what follows them are the rules that read several
fields at once (a model's source and its sequence lengths, training's single batch size, one way to have a
server).  ``RunSpec.__post_init__`` calls ``validate``; the first problem found raises ``SpecError`` naming the
field, in a sentence the CLI and the GUI show as it is.

Shared by the agent and the app: stdlib only, Python 3.8.
"""
from __future__ import annotations

import math
from dataclasses import fields
from typing import Any, Optional, Tuple

from remote_agent.model_ref import TASKS, ModelRefError, check_model_file, parse_model_ref, served_model_id
from remote_agent.spec_limits import wire_problem
from remote_agent.spec_values import (
    BACKENDS,
    DATA_SOURCES,
    MAX_CONCURRENCY,
    MAX_NODES,
    MAX_SEQ_LEN,
    MODEL_ARG_KEY,
    NEURON_MODES,
    NEURON_STACKS,
    PRECISIONS,
    SERVERS,
    TARGET_CI_MAX_PCT,
    TARGET_CI_MIN_STEPS,
    WORKLOADS,
    SpecError,
    check_telemetry_period,
)

# A field and the values it may take ("" allowed where the tuple holds it, or where the field is optional).
CHOICES = (("workload", WORKLOADS), ("backend", BACKENDS), ("precision", PRECISIONS), ("data", DATA_SOURCES),
           ("neuron_stack", NEURON_STACKS), ("neuron_mode", NEURON_MODES), ("task", ("",) + TASKS),
           ("server", ("",) + SERVERS))
FLAGS = ("check", "compile", "compile_cache_reuse", "dynamic_shapes")
# A field, its least and greatest value (None: no bound), and whether None means "not set" (the host decides).
COUNTS = (("steps", 1, None, False), ("warmup", 0, None, False), ("min_iters", 1, None, False),
          ("nproc", 1, 256, False), ("workers", 0, 64, True), ("nnodes", 1, MAX_NODES, False))
# Text that goes on one line of a command or an environment variable, and what the message calls it.
LINES = (("neuron_cc_flags", "one line of text"), ("compile_cache", "a path"), ("server", "one line of text"),
         ("server_cmd", "one line of text"), ("endpoint", "one line of text"), ("slo", "one line of text"))
SERVE_ONLY = ("server", "server_cmd", "endpoint", "slo")
LLM_LISTS = (("input_lens", MAX_SEQ_LEN), ("output_lens", MAX_SEQ_LEN), ("concurrency", MAX_CONCURRENCY))


def _need(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise SpecError(name, message)


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _spoken(choices: Tuple[str, ...]) -> str:
    """``fp32 or bf16``; ``one of auto, neuron, xla, cuda, cpu``: the values a field may take, as a sentence says
    them (the empty "host decides" value is not one the user types)."""
    named = [c for c in choices if c]
    return " or ".join(named) if len(named) == 2 else "one of " + ", ".join(named)


def _count_problem(value: Any, low: int, high: Optional[int]) -> Optional[str]:
    if is_int(value) and value >= low and (high is None or value <= high):
        return None
    if high is not None:
        return "must be between %d and %d" % (low, high)
    return "must be 0 or more" if low == 0 else "must be a positive integer"


def check_fields(spec: Any) -> None:
    """Each field alone, by the tables above."""
    for name, choices in CHOICES:
        value = getattr(spec, name)
        _need(value in choices, name, "%s must be %s, not %r" % (name, _spoken(choices), value))
    for name in FLAGS:
        _need(isinstance(getattr(spec, name), bool), name, "%s must be true or false" % name)
    for name, low, high, optional in COUNTS:
        value = getattr(spec, name)
        problem = None if optional and value is None else _count_problem(value, low, high)
        _need(problem is None, name, "%s %s, not %r" % (name, problem, value))
    _need(is_int(spec.seed), "seed", "seed must be an integer")
    for name, what in LINES:
        value = getattr(spec, name)
        _need(isinstance(value, str) and "\n" not in value, name, "%s must be %s" % (name, what))
    _need(isinstance(spec.duration, (int, float)) and not isinstance(spec.duration, bool)
          and math.isfinite(spec.duration) and spec.duration > 0, "duration",
          "duration must be a positive number of seconds, not %r" % (spec.duration,))
    period = check_telemetry_period(spec.telemetry_period, allow_off=True)
    _need(period is None, "telemetry_period", "telemetry_period %s" % period)


def check_lengths(name: str, values: Tuple[Any, ...], readable: str, limit: Optional[int],
                  positive_message: str) -> None:
    """Positive integers up to ``limit`` (None: any the wire carries), none repeated."""
    for value in values:
        _need(is_int(value) and value >= 1 and (limit is None or value <= limit), name, positive_message % (value,))
    _need(len(set(values)) == len(values), name, "%s repeat: %s" % (readable, ",".join(str(v) for v in values)))


def check_model(spec: Any) -> Any:
    """The model reference, its task and its file; the parsed reference."""
    # serve of a running server (--endpoint, --server-cmd): --model is its model id as it names it, any string
    served = served_model_id(spec.model) if spec.workload == "serve" and (spec.endpoint or spec.server_cmd) \
        else None
    try:
        ref = served or parse_model_ref(spec.model)
    except ModelRefError as exc:
        raise SpecError("model", str(exc)) from None
    _need(spec.task == "" or ref.source == "hf", "task",
          "task applies to hf: models only (%s builds its own head)" % ref.source)
    try:
        check_model_file(spec.model_file, ref.source)
    except ModelRefError as exc:
        raise SpecError("model_file", str(exc)) from None
    _need(isinstance(spec.model_args, dict), "model_args", "model_args must be a mapping")
    for key, value in spec.model_args.items():
        _need(isinstance(key, str) and bool(MODEL_ARG_KEY.match(key)), "model_args",
              "model argument name %r is not a Python identifier" % (key,))
        _need(_is_json_literal(value), "model_args",
              "model argument %s=%r is not a number, string, boolean, null or list of those" % (key, value))
    return ref


def check_shapes(spec: Any, ref: Any) -> None:
    """Batch sizes and sequence lengths: positive, unique, and one of each for training."""
    check_lengths("seq_lens", spec.seq_lens, "sequence lengths", MAX_SEQ_LEN,
                  "sequence length must be a positive integer, not %r")
    _need(not spec.seq_lens or ref.source in ("hf", "file"), "seq_lens",
          "seq len applies to text models; %s has no sequence length (its inputs are images)" % spec.model)
    _need(len(spec.batch_sizes) > 0, "batch_sizes", "give at least one batch size")
    check_lengths("batch_sizes", spec.batch_sizes, "batch sizes", None,
                  "batch size must be a positive integer, not %r")
    if spec.workload == "train":
        _need(len(spec.seq_lens) <= 1, "seq_lens",
              "training takes one sequence length per run, got %s" % ",".join(str(n) for n in spec.seq_lens))
        _need(len(spec.batch_sizes) == 1, "batch_sizes",
              "training takes one batch size per run, got %s (sweep with inference, or run once per size)"
              % ",".join(str(b) for b in spec.batch_sizes))
        _need(spec.steps > spec.warmup, "steps",
              "steps (%d) must be greater than warmup (%d): no step would be measured" % (spec.steps, spec.warmup))


def check_target_ci(spec: Any) -> None:
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


def check_placement(spec: Any) -> None:
    """Several nodes, and a Neuron stack: what they apply to."""
    if spec.nnodes > 1:
        _need(spec.workload == "train", "nnodes",
              "a run spans several nodes for training only; inference runs on one node (--nnodes 1)")
    if spec.neuron_stack:
        _need(spec.backend in ("auto", "neuron"), "neuron_stack",
              "neuron_stack %s applies to the neuron backend, not %s" % (spec.neuron_stack, spec.backend))


def check_llm(spec: Any) -> None:
    """The LLM workloads' fields: positive, unique lengths and levels for the workloads they apply to; one way to
    have a server; a language-model head to generate with."""
    for name, limit in LLM_LISTS:
        values = getattr(spec, name)
        readable = name.replace("_", " ")
        check_lengths(name, values, readable, limit,
                      "%s must be positive integers up to %d, not %%r" % (readable, limit))
        if values:
            serve_only = name == "concurrency"
            _need(spec.workload == "serve" or (not serve_only and spec.workload == "generate"), name,
                  "%s applies to the %s workload, not %s"
                  % (readable, "serve" if serve_only else "generate and serve", spec.workload))
    for name in SERVE_ONLY:
        if getattr(spec, name):
            _need(spec.workload == "serve", name, "%s applies to the serve workload, not %s"
                  % (name.replace("_", " "), spec.workload))
    if spec.workload == "generate":
        _need(spec.task in ("", "causal-lm"), "task",
              "generate needs a causal language model: --task %s builds no language-model head to generate "
              "with; use --task causal-lm (a decoder such as Llama, Mistral or GPT-2)" % spec.task)
    _need(not spec.compile or spec.workload == "generate", "compile",
          "--compile applies to the generate workload, not %s" % spec.workload)
    ways = [name for name in ("server", "server_cmd", "endpoint") if getattr(spec, name)]
    _need(len(ways) <= 1, ways[-1] if ways else "server",
          "give one of server, server cmd or endpoint, not %s" % " and ".join(w.replace("_", " ") for w in ways))


def validate(spec: Any) -> None:
    """Raise SpecError for the first problem of ``spec`` (a RunSpec), naming its field."""
    # First: what the events could not carry (and the checks below would recurse into) is refused here.
    problem = wire_problem({f.name: getattr(spec, f.name) for f in fields(spec)})
    if problem:
        raise SpecError(*problem)
    check_fields(spec)
    ref = check_model(spec)
    check_shapes(spec, ref)
    check_target_ci(spec)
    check_placement(spec)
    check_llm(spec)


def _is_json_literal(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_is_json_literal(v) for v in value)
    return False
