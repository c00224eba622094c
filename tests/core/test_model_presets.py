"""The presets' models: the shipped configs build exactly the seed's models, and specs carry them."""
from __future__ import annotations

import hashlib
import json

import pytest

from app.core.errors import BadSpecError
from app.core.presets import PRESETS
from app.core.specs import build_spec, model_config_problem
from app.paths import resources_dir
from app.services.model_files import model_file_for


@pytest.mark.parametrize("preset, auto_class, parameters", [
    # Seed 003's table: "BertLargeUncased (335,143,938 parameters)", "ElectraLargeDiscriminator (334,092,288)".
    ("seed-infer-bert-large", "AutoModelForSequenceClassification", 335_143_938),
    ("seed-infer-electra-large", "AutoModel", 334_092_288),
    ("gpt2-train", "AutoModelForCausalLM", 124_439_808),
])
def test_shipped_configs_build_the_seed_models_exactly(preset, auto_class, parameters):
    import torch
    import transformers

    spec = PRESETS[preset].spec
    attached = model_file_for(spec.model)
    assert attached is not None and attached["name"] == "config.json"
    data = json.loads(attached["text"])
    config = transformers.CONFIG_MAPPING[data["model_type"]].from_dict(data)
    with torch.device("meta"):  # structure only: no memory, no random init
        model = getattr(transformers, auto_class).from_config(config)
    assert sum(p.numel() for p in model.parameters()) == parameters


def test_seed_presets_keep_the_seeds_shapes_and_calls():
    bert, electra = PRESETS["seed-infer-bert-large"].spec, PRESETS["seed-infer-electra-large"].spec
    assert (bert.batch_sizes, bert.seq_lens, bert.task) == ((1, 10), (128,), "classification")
    assert (electra.batch_sizes, electra.seq_lens) == ((1, 10), (256,))
    assert bert.warmup == electra.warmup == 1 and bert.min_iters == electra.min_iters == 10
    assert PRESETS["seed-infer-resnet50"].spec.model == "torchvision:resnet50"


def test_a_local_config_is_read_and_checked_on_this_computer(tmp_path):
    folder = tmp_path / "my-bert"
    folder.mkdir()
    text = json.dumps({"model_type": "bert", "max_position_embeddings": 64, "vocab_size": 100})
    (folder / "config.json").write_text(text)
    attached = model_file_for(f"hf:{folder}")
    assert attached == {"name": "config.json", "sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text}
    spec = build_spec(workload="infer", model=f"hf:{folder}", model_file=attached, seq_lens=(64,))
    assert model_config_problem(spec) is None
    spec = build_spec(spec, seq_lens=(128,))
    assert model_config_problem(spec) == f"--seq-len 128 is past {folder}'s maximum of 64 positions " \
        "(max_position_embeddings)"
    # A hub id NeuronBench does not ship leaves the config to the host.
    assert model_file_for("hf:some-org/some-model") is None
    assert (resources_dir() / "models" / "gpt2" / "config.json").is_file()
    with pytest.raises(BadSpecError, match="is neither a hub id nor a config"):
        model_file_for(f"hf:{tmp_path / 'nowhere' / 'cfg.json'}")
