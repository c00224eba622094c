"""RunSpec validation: every bad field is named, good specs round-trip through JSON."""
from __future__ import annotations

import json

import pytest

from remote_agent.event_schema import INT_MAX, INT_MIN, MAX_STR, check_event
from remote_agent.protocol import RunSpec, SpecError, make_event


def test_default_spec_is_the_seed_experiment():
    spec = RunSpec()
    assert spec.model == "vit_base_patch16_224"
    assert spec.batch_size == 16 and spec.warmup == 10 and spec.workload == "train"


def test_round_trip_through_json():
    spec = RunSpec(workload="infer", model="resnet50", model_args={"drop_rate": 0.1, "global_pool": "avg"},
                   batch_sizes=(1, 4, 16), duration=2.5, precision="bf16")
    assert RunSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@pytest.mark.parametrize("changes, field, words", [
    ({"workload": "chat"}, "workload", "workload must be one of train, infer, generate, serve"),
    ({"workload": "train", "input_lens": (128,)}, "input_lens", "applies to the generate and serve workload"),
    ({"workload": "generate", "concurrency": (1,)}, "concurrency", "applies to the serve workload"),
    ({"workload": "serve", "server": "vllm", "endpoint": "http://127.0.0.1:1"}, "endpoint", "give one of server"),
    ({"model": "vit; rm -rf /"}, "model", "is not a timm model name"),
    ({"backend": "tpu"}, "backend", "backend must be one of"),
    ({"batch_sizes": (0,)}, "batch_sizes", "batch size must be a positive integer, not 0"),
    ({"batch_sizes": (-4,)}, "batch_sizes", "not -4"),
    ({"batch_sizes": ()}, "batch_sizes", "at least one batch size"),
    ({"batch_sizes": (1, 4)}, "batch_sizes", "training takes one batch size"),
    ({"steps": 10, "warmup": 10}, "steps", "steps (10) must be greater than warmup (10)"),
    ({"steps": 0}, "steps", "steps must be a positive integer"),
    ({"warmup": -1}, "warmup", "warmup must be 0 or more"),
    ({"precision": "fp8"}, "precision", "precision must be fp32 or bf16"),
    ({"nproc": 0}, "nproc", "nproc must be between 1 and 256"),
    ({"model_args": {"not valid": 1}}, "model_args", "is not a Python identifier"),
    ({"model_args": {"x": {"nested": 1}}}, "model_args", "is not a number, string"),
])
def test_bad_fields_are_named(changes, field, words):
    with pytest.raises(SpecError) as caught:
        RunSpec(**changes)
    assert caught.value.field == field
    assert words in str(caught.value)


@pytest.mark.parametrize("changes", [{"workload": "infer", "batch_sizes": (1, 4, 4)},
                                     {"workload": "infer", "duration": 0},
                                     {"workload": "infer", "min_iters": 0}])
def test_bad_inference_settings(changes):
    with pytest.raises(SpecError):
        RunSpec(**changes)


def test_inference_may_sweep_and_needs_no_steps_beyond_warmup():
    spec = RunSpec(workload="infer", batch_sizes=(1, 4, 16), steps=1, warmup=10)
    assert spec.batch_sizes == (1, 4, 16)


def test_unknown_fields_in_json_are_refused():
    with pytest.raises(SpecError, match="unknown spec field"):
        RunSpec.from_dict({"workload": "train", "batchsize": 4})


def test_every_field_has_help_for_cli_and_tooltips():
    for name, meta in RunSpec.field_help().items():
        assert meta["help"], name


def _nested(levels: int) -> object:
    value: object = 0
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("changes, field, words", [
    ({"steps": 10 ** 20}, "steps", "steps is an integer outside the 64-bit range"),
    ({"batch_sizes": (2 ** 63,)}, "batch_sizes", "batch size is an integer outside the 64-bit range"),
    ({"seed": -(10 ** 30)}, "seed", "seed is an integer outside the 64-bit range"),
    ({"model_args": {"k": "x" * (MAX_STR + 1)}}, "model_args", "model argument k is 65537 characters long"),
    ({"model_args": {"k": _nested(29)}}, "model_args", "model argument k nests deeper than the 28 levels"),
    ({"model_args": {"k": _nested(900)}}, "model_args", "model argument k nests deeper than the 28 levels"),
    ({"neuron_cc_flags": "-O1 " * 20_000}, "neuron_cc_flags", "neuron cc flags is 80000 characters long"),
])
def test_a_spec_the_events_could_not_carry_is_refused_before_it_starts(changes, field, words):
    with pytest.raises(SpecError) as caught:
        RunSpec(**changes)
    assert caught.value.field == field and words in str(caught.value), str(caught.value)


def test_the_deepest_spec_the_checks_let_through_passes_the_event_schema_in_hello_and_result():
    spec = RunSpec(model_args={"k": _nested(28), "s": "x" * MAX_STR}, steps=INT_MAX, seed=INT_MIN,
                   batch_sizes=(INT_MAX,))
    carried = spec.to_event_dict()
    hello = make_event("hello", 1, 1.0, agent_version="1", protocol_version=1, pid=1, python="3", run_id="r",
                       spec=carried)
    result = make_event("result", 2, 2.0, result={"status": "ok", "spec": carried})
    for event in (hello, result):
        check_event(event)
