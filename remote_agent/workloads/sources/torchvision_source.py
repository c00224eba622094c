"""``torchvision:NAME``: a torchvision classification model, ``get_model(NAME, weights=None)``."""
from __future__ import annotations

from typing import Any, Tuple

from remote_agent.workloads.problems import SpecProblem
from remote_agent.workloads.sources.timm_source import close_names, image_classifier
from remote_agent.workloads.under_test import ModelUnderTest

DEFAULT_IMAGE_SIZE = 224


def _image_size(name: str, model_args: dict) -> int:
    """The crop size of the model's default weights (299 for Inception v3), read from torchvision's
    metadata without downloading anything; ``--model-arg image_size=N`` (ViT) wins."""
    import torchvision

    if isinstance(model_args.get("image_size"), int):
        return model_args["image_size"]
    try:
        weights = torchvision.models.get_model_weights(name)
        transforms = next(iter(weights)).transforms
        return int(getattr(transforms, "keywords", {}).get("crop_size", DEFAULT_IMAGE_SIZE))
    except (ValueError, StopIteration, TypeError):
        return DEFAULT_IMAGE_SIZE


def build(name: str, spec: Any) -> ModelUnderTest:
    import torch
    import torchvision

    # Classification models only: detection and segmentation models take lists of images and
    # return dicts of boxes or masks, another contract.
    names = torchvision.models.list_models(module=torchvision.models)
    if name not in names:
        close = close_names(name, names)
        others = torchvision.models.list_models()
        kind = (" (it is a detection, segmentation or video model; NeuronBench benchmarks torchvision's "
                "classifiers)" if name in others else "")
        hint = "did you mean %s?" % ", ".join(close) if close else "see torchvision.models.list_models()"
        raise SpecProblem("unknown torchvision classification model %r (torchvision %s)%s: %s"
                          % (name, torchvision.__version__, kind, hint))
    torch.manual_seed(spec.seed)
    try:
        module = torchvision.models.get_model(name, weights=None, **spec.model_args)
    except (TypeError, ValueError) as exc:
        raise SpecProblem("torchvision model %s could not be built with --model-arg %s: %s"
                          % (name, spec.model_args, exc)) from exc
    size = _image_size(name, spec.model_args)
    shape: Tuple[int, int, int] = (3, size, size)
    num_classes = int(spec.model_args.get("num_classes", 1000))
    # Inception v3 and GoogLeNet add auxiliary logits in training mode: the loss takes the main ones.
    describe = {"source": "torchvision", "name": name, "class": type(module).__name__,
                "libraries": {"torchvision": torchvision.__version__}}
    return image_classifier(module, shape, num_classes, describe)
