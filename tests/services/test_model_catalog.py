"""timm's model names for the picker: listed by the local Python in a subprocess, cached, or a sentence why not."""
from __future__ import annotations

import os
import sys

import pytest

from app.core.errors import NeuronBenchError
from app.services import model_catalog
from app.services.model_catalog import load_model_catalog


@pytest.mark.slow
def test_the_names_come_from_timm_in_a_subprocess_and_are_cached(tmp_path, monkeypatch):
    catalog = load_model_catalog(sys.executable, tmp_path)
    assert "vit_tiny_patch16_224" in catalog.names and "resnet50" in catalog.names
    assert catalog.timm_version.startswith("1.") and catalog.python == sys.executable
    # torchvision's classification models, for the picker's torchvision source (its detection models are not)
    assert "resnet50" in catalog.torchvision_names and "fasterrcnn_resnet50_fpn" not in catalog.torchvision_names
    assert catalog.torchvision_version and not catalog.torchvision_error
    assert (tmp_path / "timm-models.json").exists()

    def no_subprocess(*_args, **_kwargs):
        raise AssertionError("the cached list should have been used")

    monkeypatch.setattr(model_catalog.subprocess, "run", no_subprocess)
    assert load_model_catalog(sys.executable, tmp_path).names == catalog.names


def test_a_python_without_timm_gives_a_sentence(tmp_path):
    # A real interpreter without site-packages stands for a host Python that lacks timm.
    bare = tmp_path / "python-without-site"
    bare.write_text(f"#!/bin/sh\nexec {sys.executable} -S \"$@\"\n")
    os.chmod(bare, 0o755)
    with pytest.raises(NeuronBenchError) as caught:
        load_model_catalog(str(bare), tmp_path)
    assert str(caught.value) == (f"could not list timm models with {bare}: "
                                 "ModuleNotFoundError: No module named 'timm'")
    assert "Traceback" in caught.value.detail
    assert not (tmp_path / "timm-models.json").exists()


def test_a_cache_from_before_torchvision_names_is_not_used(tmp_path):
    (tmp_path / "timm-models.json").write_text('{"python": "/nonexistent/python3", "timm": "1.0", "models": ["x"]}')
    with pytest.raises(NeuronBenchError, match="could not list timm models with /nonexistent/python3"):
        load_model_catalog("/nonexistent/python3", tmp_path)


def test_a_cache_for_another_python_is_not_used(tmp_path):
    (tmp_path / "timm-models.json").write_text('{"python": "/other/python3", "timm": "1.0", "models": ["x"]}')
    with pytest.raises(NeuronBenchError, match="could not list timm models with /nonexistent/python3"):
        load_model_catalog("/nonexistent/python3", tmp_path)
