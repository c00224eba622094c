"""The ``generate`` workload for one sweep point: B rows, S prompt tokens, exactly N new tokens (one process each).

setup (build the causal LM, random weights, random prompt ids) -> load (onto the device, timed apart) ->
the first call (compiles on static-shape stacks; timed apart, with the compile seconds the stack counts)
-> numerical check (the first step's logits against the eager fp32 model on CPU; greedy tokens' agreement
beside) -> warm-up calls at the exact shape -> timed calls until both ``--min-iters`` calls and
``--duration`` seconds (or ``--target-ci``).  Every call is held to exactly N new tokens per row and
fails the run in one sentence when a row is short.  A ``StoppingCriteria`` stamps each step after the
device finished it; every figure comes from those stamps through remote_agent/llm_figures.py.
"""
from __future__ import annotations

import copy
import json
import time
from typing import Any, Dict, List, Optional, Tuple

from remote_agent import llm_figures
from remote_agent.eventlog import WorkerEvents
from remote_agent.stopping import ThroughputStop
from remote_agent.workloads import check as numerics
from remote_agent.workloads.flops import count_flops, matmul_dtype
from remote_agent.workloads.problems import SpecProblem
from remote_agent.workloads.train import Phase

CHECK_TOKENS = 16  # greedy tokens the eager CPU reference generates for the agreement rate
NO_LOGITS = "the stack returned no logits to compare"
CALL_EVENT_GAP_S = 0.05  # at most ~20 per-call events a second (a tiny model's calls take milliseconds)
GIB = 1024 ** 3


class ShortGeneration(Exception):
    """A call produced fewer (or more) than N new tokens in some row: its figures would be false."""

    error_kind = "runtime"


def point_tag(batch: int, input_len: int, output_len: int) -> str:
    """``bs4-in128-out128``: names one sweep point's compiled artefact."""
    return "bs%d-in%d-out%d" % (batch, input_len, output_len)


def run_generate(spec: Any, backend: Any, events: WorkerEvents, summary_path: str, phase: Phase,
                 batch_size: int, input_len: int, output_len: int, workdir: str) -> None:
    import torch

    from remote_agent.backends.generation import Shape

    shape = Shape(batch_size, input_len, output_len)
    where: Dict[str, Any] = {"batch_size": batch_size, "input_len": input_len, "output_len": output_len}
    summary: Dict[str, Any] = dict(where, warnings=[])
    events.emit("phase", name="setup", state="start", **where)
    mut, vocab, pad = build_causal_lm(spec, shape, workdir)
    module = mut.module.eval()
    dtype = torch.bfloat16 if spec.precision == "bf16" else torch.float32
    flops = generation_flops(mut, shape, spec, backend.name)
    reference = copy.deepcopy(module).float().eval() if spec.check else None
    from remote_agent.workloads import synthetic

    prompts = synthetic.token_ids(batch_size, input_len, vocab, spec.seed)
    mask = torch.ones_like(prompts)
    for note in mut.notes:
        events.emit("log", level="info", message=note)
    generator = backend.generator(module.to(dtype=dtype), shape, pad, workdir, str(spec.model))
    events.emit("phase", name="setup", state="end", backend=backend.name, devices=1, **where,
                prefill_flops_per_row=flops.get("prefill_flops_per_row"),
                decode_flops_per_token=flops.get("decode_flops_per_token"), matmul_dtype=flops.get("matmul_dtype"))
    summary.update(model=mut.describe(), flops=flops, memory=memory_estimate(module, shape, spec.precision))

    try:
        measure_point(spec, events, summary_path, phase, shape, where, summary, mut, generator, reference,
                      prompts, mask, vocab, pad, flops, backend)
    except Exception as exc:
        if not is_oom(exc):
            raise
        sentence = oom_sentence(shape, summary.get("memory"), str(exc))
        summary["error"] = {"kind": "oom", "message": sentence}
        with open(summary_path, "w") as handle:
            json.dump(summary, handle)
        raise PointFailed("oom", sentence) from exc


def is_oom(exc: BaseException) -> bool:
    text = (type(exc).__name__ + " " + str(exc)).lower()
    return isinstance(exc, MemoryError) or any(marker in text for marker in (
        "out of memory", "outofmemory", "cannot allocate memory", "resource_exhausted", "failed to allocate"))


class PointFailed(Exception):
    """One sweep point failed in a way the sentence says in full (``error_kind`` is the protocol's kind)."""

    def __init__(self, kind: str, sentence: str) -> None:
        super().__init__(sentence)
        self.error_kind = kind


def measure_point(spec: Any, events: WorkerEvents, summary_path: str, phase: Phase, shape: Any,
                  where: Dict[str, Any], summary: Dict[str, Any], mut: Any, generator: Any, reference: Any,
                  prompts: Any, mask: Any, vocab: int, pad: int, flops: Dict[str, Any], backend: Any) -> None:
    from remote_agent.backends.generation import step_hook_class, timed

    batch_size, input_len, output_len = shape.batch, shape.input_len, shape.output_len
    phase.name = "load"
    events.emit("phase", name="compile", state="start", **where)
    compile_before = generator.compile_seconds()  # before the load: Neuron compiles (exports) as it loads
    summary["load_s"] = timed(generator.load)
    StepStamp = step_hook_class()
    clock = time.perf_counter

    def call(ids: Any, logits: bool = False) -> Tuple[llm_figures.Timeline, Any]:
        hook = StepStamp(generator.sync, clock)
        start = clock()
        out = generator.generate(ids, mask, [hook], logits=logits)
        end = clock()
        sequences = out[0] if logits else out
        count_new_tokens(sequences, input_len, output_len, len(hook.stamps), shape)
        return llm_figures.Timeline(start, tuple(hook.stamps), output_len, input_len, batch_size, end=end), out

    phase.name = "compile"
    first, _ = call(prompts)
    compile_after = generator.compile_seconds()
    summary["first_call_s"] = llm_figures.e2e_s(first)
    summary["first_call"] = llm_figures.call_figures(first)
    summary["compile_s"] = None if compile_after is None or compile_before is None else compile_after - compile_before
    summary["compile_note"] = generator.compile_note
    events.emit("phase", name="compile", state="end", seconds=summary["first_call_s"], **where)
    emit_call(events, where, "first", 0, first)

    if reference is not None:
        phase.name = "check"
        summary["check"] = check_generation(call, reference, shape, vocab, spec, backend.name, pad)
        sentence = numerics.warning(summary["check"], shape.text())
        if sentence:
            summary["warnings"].append(sentence)
            events.emit("log", level="warning", message=sentence, check=summary["check"], **where)
    else:
        summary["check"] = None

    phase.name = "warmup"
    events.emit("phase", name="warmup", state="start", **where)
    for k in range(spec.warmup):
        warm, _ = call(prompts)
        emit_call(events, where, "warmup", k + 1, warm)
    events.emit("phase", name="warmup", state="end", **where)
    summary["warmup_calls"] = spec.warmup

    phase.name = "measure"
    events.emit("phase", name="measure", state="start", **where)
    timelines: List[llm_figures.Timeline] = []
    rule = ThroughputStop(spec.target_ci, spec.min_iters)  # on each call's E2E: output tok/s = B N / E2E
    duration_done_at: Optional[int] = None
    begin = last_event = clock()
    while True:
        timeline, _ = call(prompts)
        timelines.append(timeline)
        known = rule.add(llm_figures.e2e_s(timeline) or 0.0)
        now = clock()
        if now - last_event >= CALL_EVENT_GAP_S:
            emit_call(events, where, "measure", len(timelines), timeline, rule.ci_pct())
            last_event = now
        if duration_done_at is None and now - begin >= spec.duration:
            duration_done_at = len(timelines)
        if known or (len(timelines) >= spec.min_iters and duration_done_at is not None):
            break
    summary["wall_s"] = clock() - begin
    events.emit("phase", name="measure", state="end", **where)

    summary.update(llm_figures.generate_summary(timelines))
    summary["total_tok_s"] = median_rate(timelines, input_len + output_len)
    capped_by = "min_iters" if duration_done_at is not None and duration_done_at < spec.min_iters else "duration"
    stopping, missed = rule.outcome(capped_by, spec.duration, shape.text())
    summary["stopping"] = stopping
    if missed:
        summary["warnings"].append(missed)
    if len(timelines) < llm_figures.P99_MIN_VALUES:
        summary["warnings"].append("%s: p99 TTFT and TPOT come from %d calls (fewer than %d): treat them as rough"
                                   % (shape.text(), len(timelines), llm_figures.P99_MIN_VALUES))
    if flops.get("missing"):
        summary["warnings"].append("%s: FLOPs not counted, so no MFU: %s" % (shape.text(), flops["missing"]))
    summary["backend"] = dict(backend.describe(), **generator.describe())
    for sentence in summary["backend"].pop("warnings", None) or []:  # ops that fell back to the host CPU
        if sentence not in summary["warnings"]:
            summary["warnings"].append(sentence)
    with open(summary_path, "w") as handle:
        json.dump(summary, handle)


def median_rate(timelines: List[llm_figures.Timeline], tokens_per_row: int) -> Optional[float]:
    """Prompt + output tokens per second of the median call (labelled so wherever it is shown)."""
    import statistics

    rates = []
    for tl in timelines:
        seconds = llm_figures.e2e_s(tl)
        if seconds:
            rates.append(tl.batch * tokens_per_row / seconds)
    return statistics.median(rates) if rates else None


def emit_call(events: WorkerEvents, where: Dict[str, Any], stage: str, index: int,
              timeline: llm_figures.Timeline, ci_pct: Optional[float] = None) -> None:
    """The per-call event the live view draws: TTFT, TPOT and the prefill/decode split of this call."""
    figures = llm_figures.call_figures(timeline)
    ms = {key.replace("_s", "_ms"): (None if figures[key] is None else figures[key] * 1000.0)
          for key in ("ttft_s", "tpot_s", "e2e_s", "decode_s")}
    extra = {"ci_pct": ci_pct} if ci_pct is not None else {}
    events.emit("gen_call", stage=stage, i=index, output_tok_s=figures["output_tok_s"], **ms, **where, **extra)


def count_new_tokens(sequences: Any, input_len: int, output_len: int, steps: int, shape: Any) -> None:
    """Every row holds exactly N new tokens (and the step hook ran N times), or the run fails saying so."""
    rows, width = int(sequences.shape[0]), int(sequences.shape[1])
    new = width - input_len
    if rows != shape.batch or new != output_len or steps != output_len:
        got = new if new != output_len else steps
        raise ShortGeneration(
            "%s: a call produced %d new token%s per row (%d decoding steps) instead of exactly %d: the model's "
            "generate stopped early (an end-of-sequence or stop rule), so its figures would be false; nothing "
            "was measured at this shape" % (shape.text(), got, "" if got == 1 else "s", steps, output_len))


# ----------------------------------------------------------------------------- the model

def build_causal_lm(spec: Any, shape: Any, workdir: str) -> Tuple[Any, int, int]:
    """(model under test, vocabulary size, pad id): a causal LM that can generate, refused in one sentence else."""
    import dataclasses

    from remote_agent.model_ref import parse_model_ref
    from remote_agent.workloads.sources import load_model

    ref = parse_model_ref(spec.model)
    if ref.source == "hf" and spec.task and spec.task != "causal-lm":
        raise SpecProblem("generate needs a causal language model: %s as --task %s has no language-model head "
                          "to generate with; use --task causal-lm (a decoder such as Llama, Mistral or GPT-2)"
                          % (ref.name, spec.task))
    if ref.source in ("timm", "torchvision"):
        raise SpecProblem("generate needs a causal language model (hf:ID --task causal-lm, or file:PATH whose "
                          "build() returns a model with .generate); %s is an image model" % spec.model)
    build_spec = dataclasses.replace(spec, task="causal-lm") if ref.source == "hf" else spec
    try:
        mut = load_model(build_spec, shape.batch, shape.input_len, workdir)
    except SpecProblem as exc:
        if ref.source != "file" or "takes no seq_len parameter" not in str(exc):
            raise
        # A file whose build() takes no seq_len makes its own inputs: the prompts are ours all the same.
        mut = load_model(build_spec, shape.batch, None, workdir)
    module = mut.module
    config = getattr(module, "config", None)
    can = getattr(module, "can_generate", None)
    if not hasattr(module, "generate") or (callable(can) and not can()):
        raise SpecProblem("generate needs a causal language model: %s (%s) has no generate(); a file: model's "
                          "build() must return one (a transformers *ForCausalLM)" % (spec.model, type(module).__name__))
    vocab = getattr(config, "vocab_size", None)
    if not isinstance(vocab, int) or vocab < 2:
        raise SpecProblem("%s has no vocabulary size in its config (config.vocab_size): random prompts need one"
                          % spec.model)
    limit = _max_positions(config)
    if limit and shape.total_len > limit:
        raise SpecProblem("%d prompt tokens + %d new tokens = %d positions, past %s's maximum of %d "
                          "(max_position_embeddings): lower --input-lens or --output-lens"
                          % (shape.input_len, shape.output_len, shape.total_len, ref.name, limit))
    pad = getattr(config, "pad_token_id", None)
    if not isinstance(pad, int) or not 0 <= pad < vocab:
        eos = getattr(config, "eos_token_id", None)
        pad = eos if isinstance(eos, int) and 0 <= eos < vocab else 0
    return mut, vocab, pad


def _max_positions(config: Any) -> Optional[int]:
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def memory_estimate(module: Any, shape: Any, precision: str) -> Dict[str, Any]:
    """Weights and the KV cache at this shape (bytes): what an OOM sentence says the point needed."""
    width = 2 if precision == "bf16" else 4
    weights = sum(p.numel() for p in module.parameters()) * width
    config = getattr(module, "config", None)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_head", None)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or (hidden // heads if hidden and heads else None)
    kv = None
    if layers and kv_heads and head_dim:
        kv = 2 * layers * kv_heads * head_dim * shape.batch * shape.total_len * width
    return {"weights_bytes": weights, "kv_cache_bytes": kv}


def oom_sentence(shape: Any, memory: Optional[Dict[str, Any]], detail: str) -> str:
    """``out of memory at batch 16, 128 in / 128 out: it needs about 17.1 GiB (weights ... + KV cache ...)``."""
    memory = memory or {}
    weights, kv = memory.get("weights_bytes"), memory.get("kv_cache_bytes")
    need = ""
    if weights is not None and kv is not None:
        need = ": it needs about %s (weights %s + KV cache %s, before activations)" % (
            size_text(weights + kv), size_text(weights), size_text(kv))
    return ("out of memory at %s%s; the other sweep points are still measured, try a smaller batch size (%s)"
            % (shape.text(), need, detail.strip().splitlines()[0][:200] if detail.strip() else "no detail"))


def size_text(size: float) -> str:
    """``17.1 GiB``, ``3.2 MiB``: a memory size as the OOM sentence says it."""
    return "%.1f GiB" % (size / GIB) if size >= GIB else "%.1f MiB" % (size / (1024 ** 2))


# ----------------------------------------------------------------------------- FLOPs

class _Counted:
    """What flops.count_flops reads of a model under test, at a shape of our choosing."""

    def __init__(self, mut: Any, batch: Any) -> None:
        self.module, self.positional, self.call_kwargs = mut.module, False, dict(mut.call_kwargs)
        self._batch = batch

    def make_batch(self, size: int, seed: int, labels: bool) -> Any:
        from collections import OrderedDict

        from remote_agent.workloads.under_test import Batch

        return Batch(OrderedDict((k, v[:size]) for k, v in self._batch.items()))


def generation_flops(mut: Any, shape: Any, spec: Any, backend_name: str) -> Dict[str, Any]:
    """FLOPs of the prefill per row (a forward of S tokens) and of one decode step per row.

    A decode step is a forward of one token (counted: the projections, MLP and LM head) plus its
    attention over the cache, 4 x layers x hidden x context FLOPs (QK^T and AV), at the mean context
    S + N/2 of the decode steps.
    """
    import torch

    dtype = matmul_dtype(spec.precision, backend_name, spec.neuron_cc_flags)
    block: Dict[str, Any] = {"prefill_flops_per_row": None, "decode_flops_per_token": None,
                             "counter": "torch.utils.flop_counter", "matmul_dtype": dtype}
    names = list(mut.input_names) or ["input_ids", "attention_mask"]

    def inputs(length: int) -> Any:
        ids = torch.zeros((1, length), dtype=torch.int64)
        return {n: (ids if n == "input_ids" else torch.ones_like(ids)) for n in names
                if n in ("input_ids", "attention_mask")}

    prefill = count_flops(_Counted(mut, inputs(shape.input_len)), 1, spec.seed, False, dtype)
    one = count_flops(_Counted(mut, inputs(1)), 1, spec.seed, False, dtype)
    if prefill.get("flops_per_sample") is None or one.get("flops_per_sample") is None:
        block["missing"] = prefill.get("missing") or one.get("missing")
        return block
    config = getattr(mut.module, "config", None)
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "n_layer", None)
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "n_head", None)
    hidden = getattr(config, "hidden_size", None) or getattr(config, "n_embd", None)
    head_dim = getattr(config, "head_dim", None) or (hidden // heads if hidden and heads else None)
    block["prefill_flops_per_row"] = prefill["flops_per_sample"]
    block["counted_on"] = prefill.get("counted_on")
    if layers and heads and head_dim:
        context = shape.input_len + shape.output_len / 2.0
        block["decode_flops_per_token"] = one["flops_per_sample"] + 4.0 * layers * heads * head_dim * context
    else:
        block["missing"] = "the config names no layer count, heads or hidden size for the decode attention"
    return block


# ----------------------------------------------------------------------------- numerical check

def check_generation(call: Any, reference: Any, shape: Any, vocab: int, spec: Any, backend_name: str,
                     pad: int) -> Dict[str, Any]:
    """The first step's logits (the prefill's) against the eager fp32 model on CPU, on fresh prompts; the greedy
    tokens' agreement with the reference beside it (random weights make near-ties: information, not the test)."""
    import torch

    from remote_agent.backends.generation import fixed_length
    from remote_agent.workloads import synthetic

    precision = numerics.compute_precision(spec.precision, backend_name, spec.neuron_cc_flags)
    fixed_length(reference, pad)
    parts, agree, total = [], 0, 0
    first_mismatch: Optional[int] = None
    for k in range(2):
        ids = synthetic.token_ids(shape.batch, shape.input_len, vocab, numerics.CHECK_SEED + 17 * k)
        _, (sequences, logits) = call(ids, logits=True)
        with torch.no_grad():
            want = reference(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False).logits[:, -1, :]
            steps = min(CHECK_TOKENS, shape.output_len)
            greedy = reference.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=steps,
                                        min_new_tokens=steps, do_sample=False, num_beams=1, eos_token_id=None,
                                        pad_token_id=pad)
        if logits is None:
            parts.append({"max_abs_err": None, "max_rel_err": None, "finite": True,
                          "mismatch": NO_LOGITS})
        else:
            parts.append(numerics.compare((logits,), (want,)))
        got = sequences[:, shape.input_len:shape.input_len + steps]
        mine = greedy[:, shape.input_len:]
        same = got == mine
        agree += int(same.sum())
        total += same.numel()
        for row in range(same.shape[0]):
            bad = (~same[row]).nonzero()
            if len(bad):
                first_mismatch = min(first_mismatch if first_mismatch is not None else steps, int(bad[0]))
    block = numerics.summarize(parts, precision, "first generated token's logits (prefill) against eager on "
                                                 "CPU (fp32)")
    if all(p.get("mismatch") == NO_LOGITS for p in parts):
        # optimum-neuron samples on the device and returns token ids only: agreement is all there is.
        block.update(agrees=None, note="the stack returns no logits (on-device sampling): only the greedy "
                     "tokens' agreement is reported")
    block["greedy_agreement"] = agree / total if total else None
    block["greedy_tokens_compared"] = total
    block["first_mismatch_step"] = first_mismatch
    return block
