"""``timm:NAME`` (or a bare name): a timm image classifier with random weights, the seed's model."""
from __future__ import annotations

import difflib
from collections import OrderedDict
from typing import Any, Dict, List, Tuple

from remote_agent.workloads import synthetic
from remote_agent.workloads.problems import SpecProblem
from remote_agent.workloads.under_test import Batch, ModelUnderTest, parameter_count


def _base_name(name: str) -> str:
    # "vit_base_patch16_224.augreg_in21k" -> architecture "vit_base_patch16_224"
    return name.split(".", 1)[0]


def close_names(query: str, names: List[str], limit: int = 5) -> List[str]:
    """Names that look like ``query``, also when it is a mistyped prefix (``vit_tinny``)."""
    def score(name: str) -> float:
        whole = difflib.SequenceMatcher(None, query, name).ratio()
        prefix = difflib.SequenceMatcher(None, query, name[:len(query) + 1]).ratio()
        return max(whole, prefix)

    scored = sorted(((score(n), n) for n in names), key=lambda item: (-item[0], len(item[1]), item[1]))
    return [n for s, n in scored[:limit] if s >= 0.75]


def check_model_name(name: str) -> None:
    import timm

    if timm.is_model(_base_name(name)):
        return
    close = close_names(_base_name(name), timm.list_models())
    hint = "did you mean %s?" % ", ".join(close) if close else "see timm.list_models() for the names"
    raise SpecProblem("unknown model %r (timm %s): %s" % (name, timm.__version__, hint))


def create_model(name: str, model_args: Dict[str, Any], seed: int) -> Any:
    """Build ``name`` with random weights (no download), seeded for identical replicas."""
    import timm
    import torch

    check_model_name(name)
    torch.manual_seed(seed)
    try:
        return timm.create_model(_base_name(name), pretrained=False, **model_args)
    except TypeError as exc:
        args = " ".join("%s=%s" % item for item in sorted(model_args.items()))
        raise SpecProblem("model %s does not accept --model-arg %s: %s" % (name, args, exc)) from exc
    except (ValueError, AssertionError, RuntimeError) as exc:
        raise SpecProblem("model %s could not be built with %s: %s"
                          % (name, model_args or "its defaults", exc or type(exc).__name__)) from exc


def input_shape(model: Any, model_args: Dict[str, Any]) -> Tuple[int, int, int]:
    """C, H, W of one input image: --model-arg img_size/in_chans win over the model's defaults.

    timm keeps the pretrained config's 224x224 even when ``img_size`` is
    overridden, so read the patch embedding's actual size when it has one.
    """
    channels = int(model_args.get("in_chans", model.pretrained_cfg.get("input_size", (3,))[0]))
    size = model_args.get("img_size")
    if size is None and hasattr(model, "patch_embed") and getattr(model.patch_embed, "img_size", None):
        size = model.patch_embed.img_size
    if size is None:
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))[1:]
    if isinstance(size, int):
        size = (size, size)
    height, width = (int(v) for v in size)
    return channels, height, width


def image_classifier(module: Any, shape: Tuple[int, int, int], num_classes: int,
                     describe: Dict[str, Any]) -> ModelUnderTest:
    """An image classifier: one input ``x`` of ``shape`` per sample, cross-entropy on random labels."""
    import torch

    def make_batch(batch_size: int, seed: int, labels: bool) -> Batch:
        inputs = OrderedDict([("x", synthetic.images(batch_size, shape, seed))])
        return Batch(inputs, synthetic.class_labels(batch_size, num_classes, seed) if labels else None)

    def loss(outputs: Any, batch: Batch) -> Any:
        logits = outputs[0] if isinstance(outputs, (tuple, list)) else getattr(outputs, "logits", outputs)
        return torch.nn.functional.cross_entropy(logits, batch.labels)

    describe = dict(describe, parameters=parameter_count(module), num_classes=num_classes,
                    input_shape=list(shape))
    return ModelUnderTest(module, make_batch, describe, positional=True, loss=loss, input_names=["x"])


def build(name: str, spec: Any) -> ModelUnderTest:
    import timm

    module = create_model(name, spec.model_args, spec.seed)
    shape = input_shape(module, spec.model_args)
    num_classes = int(getattr(module, "num_classes", 1000) or 1000)
    describe = {"source": "timm", "name": name, "class": type(module).__name__,
                "libraries": {"timm": timm.__version__}}
    return image_classifier(module, shape, num_classes, describe)
