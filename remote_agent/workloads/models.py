"""Creating the timm model a spec names, with messages a user can act on."""
from __future__ import annotations

import difflib
from typing import Any, List, Tuple


class SpecProblem(Exception):
    """The spec cannot run as written (unknown model, bad model argument)."""


def _base_name(name: str) -> str:
    # "vit_base_patch16_224.augreg_in21k" -> architecture "vit_base_patch16_224"
    return name.split(".", 1)[0] if not name.startswith(("hf-hub:", "hf_hub:")) else name


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

    if name.startswith(("hf-hub:", "hf_hub:")):
        raise SpecProblem("model %s: hub models need a download and weights; NeuronBench benchmarks timm "
                          "architectures with random weights, name one instead" % name)
    if timm.is_model(_base_name(name)):
        return
    close = close_names(_base_name(name), timm.list_models())
    hint = "did you mean %s?" % ", ".join(close) if close else "see timm.list_models() for the names"
    raise SpecProblem("unknown model %r (timm %s): %s" % (name, timm.__version__, hint))


def create_model(spec: Any) -> Any:
    """Build ``spec.model`` with random weights (no download), seeded for identical replicas."""
    import timm
    import torch

    check_model_name(spec.model)
    torch.manual_seed(spec.seed)
    try:
        return timm.create_model(_base_name(spec.model), pretrained=False, **spec.model_args)
    except TypeError as exc:
        args = " ".join("%s=%s" % item for item in sorted(spec.model_args.items()))
        raise SpecProblem("model %s does not accept --model-arg %s: %s" % (spec.model, args, exc)) from exc
    except (ValueError, AssertionError, RuntimeError) as exc:
        raise SpecProblem("model %s could not be built with %s: %s"
                          % (spec.model, spec.model_args or "its defaults", exc or type(exc).__name__)) from exc


def input_shape(model: Any, spec: Any) -> Tuple[int, int, int]:
    """C, H, W of one input image: --model-arg img_size/in_chans win over the model's defaults.

    timm keeps the pretrained config's 224x224 even when ``img_size`` is
    overridden, so read the patch embedding's actual size when it has one.
    """
    channels = int(spec.model_args.get("in_chans", model.pretrained_cfg.get("input_size", (3,))[0]))
    size = spec.model_args.get("img_size")
    if size is None and hasattr(model, "patch_embed") and getattr(model.patch_embed, "img_size", None):
        size = model.patch_embed.img_size
    if size is None:
        size = model.pretrained_cfg.get("input_size", (3, 224, 224))[1:]
    if isinstance(size, int):
        size = (size, size)
    height, width = (int(v) for v in size)
    return channels, height, width
