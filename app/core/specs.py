"""Building a RunSpec from what a user typed (CLI flags, GUI fields), with messages that name the flag."""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from app.core.errors import BadSpecError
from app.core.neuron_options import neuron_settings
from app.core.numbers import counted
from app.core.quoting import quoted
from app.core.target_ci import spec_target
from remote_agent.capacity import nproc_problem
from remote_agent.protocol import DEFAULT_INPUT_LEN, DEFAULT_MODEL, DEFAULT_OUTPUT_LEN, RunSpec, SpecError
from remote_agent.spec_limits import MODEL_ARG_LEVELS

__all__ = ["RunSpec", "build_spec", "flag_for", "host_fit_problem", "model_config_problem", "parse_batch_sizes",
           "parse_model_args", "parse_sizes"]


def flag_for(field_name: str) -> str:
    """The CLI flag a RunSpec field is set with (its name in messages)."""
    meta = RunSpec.field_help().get(field_name, {})
    return meta.get("flag") or "--" + field_name.replace("_", "-")


def _literal(key: str, text: str) -> Any:
    """``32`` -> 32, ``0.1`` -> 0.1, ``true``/``True`` -> True, ``none``/``null`` -> None, ``[1,2]`` -> list;
    anything else stays a string (so ``global_pool=avg`` needs no quotes)."""
    aliases = {"True": True, "False": False, "None": None, "none": None}
    if text in aliases:
        return aliases[text]
    try:
        value = json.loads(text)
    except ValueError:
        return text
    except RecursionError:  # json's reader gives up long before the end: nested far past what a run carries
        raise BadSpecError(f"--model-arg {quoted(key)} nests deeper than the {MODEL_ARG_LEVELS} levels a run's "
                           f"events can carry") from None
    return value if isinstance(value, (int, float, bool, list)) or value is None else text


def parse_model_args(items: Iterable[str]) -> dict[str, Any]:
    """``["img_size=32", "depth=2"]`` -> ``{"img_size": 32, "depth": 2}``."""
    args: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadSpecError(f"--model-arg {quoted(item)} is not KEY=VALUE (e.g. --model-arg img_size=32)")
        args[key.strip()] = _literal(key.strip(), value.strip())
    return args


def parse_sizes(text: str, flag: str = "--batch-sizes") -> tuple[int, ...]:
    """``"1,4,16"`` -> ``(1, 4, 16)``; the error names ``flag``."""
    sizes = []
    for part in text.split(","):
        part = part.strip()
        try:
            sizes.append(int(part))
        except ValueError:
            raise BadSpecError(f"{flag} {text!r}: {part!r} is not a whole number") from None
    return tuple(sizes)


def parse_batch_sizes(text: str) -> tuple[int, ...]:
    """``"1,4,16"`` -> ``(1, 4, 16)``."""
    return parse_sizes(text, "--batch-sizes")


def build_spec(base: RunSpec | Mapping[str, Any] | None = None, **changes: Any) -> RunSpec:
    """A validated RunSpec; a bad value raises BadSpecError that names the flag to fix.

    ``base`` may be a plain mapping (checked only with the changes applied); a change of None
    leaves the base's value.
    """
    data: dict[str, Any] = dict(base) if isinstance(base, Mapping) else (base or RunSpec()).to_dict()
    data.update({k: v for k, v in changes.items() if v is not None})
    try:
        return RunSpec.from_dict(data)
    except SpecError as exc:
        error = BadSpecError(_flagged(str(exc)))
        error.field = exc.field  # the GUI marks the field to fix
        raise error from None
    except TypeError as exc:
        raise BadSpecError(f"bad run spec: {exc}") from None


def _flagged(message: str) -> str:
    """Say ``--steps``/``--warmup`` where the spec's message says ``steps``/``warmup``."""
    if message.startswith("model argument "):  # one argument: not the --model flag its first word would say
        return "--model-arg " + message[len("model argument "):]
    for name in sorted(RunSpec.field_help(), key=len, reverse=True):
        readable = name.replace("_", " ")
        for spelled in (name, readable):
            if message.startswith(spelled + " ") or f" {spelled} (" in message:
                message = message.replace(spelled, flag_for(name), 1)
    return message


def spec_summary(spec: RunSpec | Mapping[str, Any]) -> str:
    """One line naming what runs: ``train vit_tiny_patch16_224 · batch 8 · 30 steps · cpu``."""
    data = spec.to_dict() if isinstance(spec, RunSpec) else dict(spec)
    sizes = ",".join(str(b) for b in data.get("batch_sizes", []))
    requests = counted(data.get("min_iters") or 0, "request")
    work = spec_target(data) or (counted(data.get("steps") or 0, "step") if data.get("workload") == "train"
                                 else f"≥{requests} and ≥{data.get('duration')} s per size")
    procs = f" × {data['nproc']} processes" if data.get("nproc", 1) > 1 else ""
    if data.get("workload") == "generate":
        calls = counted(data.get("min_iters") or 0, "call")
        work = spec_target(data) or f"≥{calls} and ≥{data.get('duration')} s per point"
        sizes += (f" · {','.join(str(n) for n in data.get('input_lens') or [DEFAULT_INPUT_LEN])} in"
                  f" / {','.join(str(n) for n in data.get('output_lens') or [DEFAULT_OUTPUT_LEN])} out")
    if data.get("workload") == "serve":
        return serve_summary(data, work)
    lengths = data.get("seq_lens") or []
    if lengths:
        sizes += f" · seq {','.join(str(n) for n in lengths)}"
    if data.get("task"):
        sizes += f" · {data['task']}"
    feed = " · data on device" if data.get("workload") == "train" and data.get("data") == "device" else ""
    neuron = neuron_settings(data)  # the Neuron options a run set: stack, eager, compiler flags, cold compile
    return (f"{data.get('workload')} {data.get('model')} · batch {sizes}{procs} · {work} · "
            f"{data.get('backend')} · {data.get('precision')}{feed}"
            + (f" · Neuron: {', '.join(neuron)}" if neuron else ""))


def serve_summary(data: Mapping[str, Any], work: str) -> str:
    """``serve hf:… (transformers) · 128 in / 128 out · concurrency 1,2,4 · SLO ttft_p99=2s · ≥100 requests…``."""
    named = "" if data.get("model") == DEFAULT_MODEL else str(data.get("model"))
    if data.get("endpoint"):
        server, model = f"endpoint {data['endpoint']}", named
    elif data.get("server_cmd"):
        server, model = f"command {data['server_cmd']}", named
    else:
        server, model = data.get("server") or "transformers", str(data.get("model"))
    shape = (f"{','.join(str(n) for n in data.get('input_lens') or [DEFAULT_INPUT_LEN])} in / "
             f"{','.join(str(n) for n in data.get('output_lens') or [DEFAULT_OUTPUT_LEN])} out")
    levels = ",".join(str(c) for c in data.get("concurrency") or [1, 2, 4])
    slo = f" · SLO {data['slo']} (with a Poisson rate search)" if data.get("slo") else ""
    return (f"serve {model + ' ' if model else ''}({server}) · {shape} · concurrency {levels}{slo} · "
            f"{work.replace('per size', 'per level')}")


def _config_positions(config: Mapping[str, Any]) -> int | None:
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def model_config_problem(spec: RunSpec) -> str | None:
    """What the config sent with an ``hf:`` model already says cannot run (one sentence), or None.

    The host checks everything again with transformers itself; this refuses, before anything
    starts, what the config alone settles: a config that is not JSON or names no ``model_type``,
    and a ``--seq-len`` past the model's positions.
    """
    if not spec.model.startswith("hf:") or not spec.model_file or not isinstance(spec.model_file.get("text"), str):
        return None
    name = spec.model[3:]
    try:
        config = json.loads(spec.model_file["text"])
    except ValueError as exc:
        return f"the config of {name} is not JSON: {exc}"
    if not isinstance(config, dict):
        return f"the config of {name} is not a JSON object"
    if not config.get("model_type"):
        return f"the config of {name} has no model_type: transformers cannot tell which architecture it describes"
    limit = _config_positions(dict(config, **{k: v for k, v in spec.model_args.items() if isinstance(v, int)}))
    if spec.workload == "generate" and limit:
        i = max(spec.input_lens or (DEFAULT_INPUT_LEN,))
        o = max(spec.output_lens or (DEFAULT_OUTPUT_LEN,))
        if i + o > limit:
            return (f"{i} prompt tokens + {o} new tokens = {i + o} positions, past {name}'s maximum of {limit} "
                    f"(max_position_embeddings): lower --input-lens or --output-lens")
    too_long = [n for n in spec.seq_lens if limit and n > limit]
    if too_long:
        return (f"--seq-len {max(too_long)} is past {name}'s maximum of {limit} positions "
                f"(max_position_embeddings)")
    return None


def host_fit_problem(spec: RunSpec, env: Mapping[str, Any]) -> str | None:
    """Why a probed host cannot run ``spec`` (the agent's own pre-flight sentence), or None.

    The agent refuses the same spec on the host before anything starts; the GUI
    asks this as the form is typed, once the ticked hosts have been probed.
    """
    return nproc_problem(spec.workload, spec.backend, spec.nproc, dict(env))
