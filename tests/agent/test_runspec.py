"""RunSpec validation: every bad field is named, good specs round-trip through JSON."""
from __future__ import annotations

import json

import pytest

from remote_agent.protocol import RunSpec, SpecError


def test_default_spec_is_the_seed_experiment():
    spec = RunSpec()
    assert spec.model == "vit_base_patch16_224"
    assert spec.batch_size == 16 and spec.warmup == 10 and spec.workload == "train"


def test_round_trip_through_json():
    spec = RunSpec(workload="infer", model="resnet50", model_args={"drop_rate": 0.1, "global_pool": "avg"},
                   batch_sizes=(1, 4, 16), duration=2.5, precision="bf16")
    assert RunSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@pytest.mark.parametrize("changes, field, words", [
    ({"workload": "serve"}, "workload", "workload must be one of train, infer"),
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
