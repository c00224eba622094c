"""The words a model and its numerical check get in the app's tables and banners (and the CLI's summary)."""
from __future__ import annotations

from app.core.model_text import check_problem, model_label


def test_a_run_table_names_the_model_the_same_way_for_every_source():
    assert model_label("vit_tiny_patch16_224") == "timm vit_tiny_patch16_224"
    assert model_label("torchvision:resnet50") == "torchvision resnet50"
    assert model_label("hf:bert-large-uncased", "classification") == "hf bert-large-uncased (classification)"
    assert model_label("hf:google/electra-large-discriminator") == "hf google/electra-large-discriminator"
    assert model_label("hf:./configs/tiny-bert/", "masked-lm") == "hf tiny-bert (local config, masked-lm)"
    assert model_label("hf:/models/gpt/config.json") == "hf gpt (local config)"
    assert model_label("file:/home/me/models/two_tower.py", "", {"name": "two_tower.py"}) == "file two_tower.py"
    assert model_label("file:net.py:make") == "file net.py:make"


def test_a_disagreeing_check_gets_one_sentence_and_an_agreeing_one_none():
    wrong = {"agrees": False, "finite": True, "max_rel_err": 2.96, "max_abs_err": 176.0}
    assert check_problem(wrong, "batch 4") == "batch 4: compiled model disagrees with eager (error 296 % of scale)"
    assert check_problem(dict(wrong, max_rel_err=0.0123), "batch 1, seq 128") == \
        "batch 1, seq 128: compiled model disagrees with eager (error 1.23 % of scale)"
    assert check_problem(dict(wrong, finite=False), "batch 2") == \
        "batch 2: compiled model gives NaN or infinity where eager gives numbers"
    assert check_problem({"agrees": False, "reference_loss": 6.2, "finite": True, "max_rel_err": 0.5},
                         "training step 1") == "training step 1: loss disagrees with eager (error 50 % of scale)"
    assert check_problem({"agrees": True, "max_rel_err": 0.0}, "batch 4") is None
    assert check_problem({"agrees": None, "note": "no output"}, "batch 4") is None
    assert check_problem(None, "batch 4") is None
