"""``--model`` read as a source and a name: what the app checks and the agent builds from."""
from __future__ import annotations

import pytest

from remote_agent.model_ref import ModelRef, ModelRefError, parse_model_ref
from remote_agent.protocol import RunSpec, SpecError


@pytest.mark.parametrize("text, ref", [
    ("vit_base_patch16_224", ModelRef("timm", "vit_base_patch16_224")),
    ("timm:vit_base_patch16_224.augreg_in21k", ModelRef("timm", "vit_base_patch16_224.augreg_in21k")),
    ("torchvision:resnet50", ModelRef("torchvision", "resnet50")),
    ("hf:bert-large-uncased", ModelRef("hf", "bert-large-uncased")),
    ("hf:google/electra-large-discriminator", ModelRef("hf", "google/electra-large-discriminator")),
    ("hf:./configs/my bert", ModelRef("hf", "./configs/my bert")),
    ("file:models/net.py", ModelRef("file", "models/net.py", "build")),
    ("file:/home/me/net.py:make_model", ModelRef("file", "/home/me/net.py", "make_model")),
])
def test_sources_and_names(text, ref):
    assert parse_model_ref(text) == ref


def test_hub_ids_and_local_paths_are_told_apart():
    assert parse_model_ref("hf:gpt2").is_hub_id and parse_model_ref("hf:org/name").is_hub_id
    for path in ("hf:./gpt2", "hf:/tmp/cfg", "hf:~/cfg", "hf:a/b/c", "hf:cfg/config.json"):
        assert not parse_model_ref(path).is_hub_id, path


@pytest.mark.parametrize("text, sentence", [
    ("", "model is empty"),
    ("onnx:model", "unknown source 'onnx'"),
    ("hf-hub:timm/vit", "timm's hub models need weights"),
    ("file:net.txt", "a model file is a Python file ending in .py"),
    ("torchvision:resnet-50", "is not a torchvision model name"),
    ("hf:", "names no model after 'hf:'"),
    ("vit\x1b[2J", "one line of at most"),
])
def test_what_cannot_be_read_says_so(text, sentence):
    with pytest.raises(ModelRefError, match=sentence.replace("(", r"\(")):
        parse_model_ref(text)


def test_the_spec_carries_a_model_files_text_and_events_carry_only_its_hash():
    spec = RunSpec(workload="infer", model="file:net.py", model_file={"name": "net.py", "sha256": "a" * 64,
                                                                       "text": "def build(b): ..."})
    assert spec.to_dict()["model_file"]["text"] == "def build(b): ..."
    echoed = spec.to_event_dict()["model_file"]
    assert echoed == {"name": "net.py", "sha256": "a" * 64, "bytes": 17}
    assert RunSpec.from_dict(spec.to_event_dict()).model_file["sha256"] == "a" * 64  # still a valid spec
    with pytest.raises(SpecError, match="needs its file's text"):
        RunSpec(workload="infer", model="file:net.py")
    with pytest.raises(SpecError, match="over the 512 KiB"):
        RunSpec(workload="infer", model="file:net.py",
                model_file={"name": "net.py", "sha256": "a" * 64, "text": "#" * (513 * 1024)})
    with pytest.raises(SpecError, match="plain file name"):
        RunSpec(workload="infer", model="file:net.py", model_file={"name": "../x.py", "sha256": "a" * 64, "text": ""})
    with pytest.raises(SpecError, match="training takes one sequence length"):
        RunSpec(workload="train", model="hf:gpt2", seq_lens=(128, 256))
