"""``hf:ID_OR_PATH``: a Hugging Face transformers model built from its config, with random weights.

The config comes from the spec (a local config.json the app sent, or one NeuronBench
ships for the presets) or, for a hub id, from the hub on the host (``config.json``
only; ``from_config`` never downloads weights): see ``hf_config``.  ``--model-arg key=value`` overrides
config fields (``num_hidden_layers=4``); ``--task`` picks the head.
"""
from __future__ import annotations

import difflib
import inspect
from collections import OrderedDict
from typing import Any, Dict, List, Optional

from remote_agent.workloads import synthetic
from remote_agent.workloads.problems import SpecProblem
from remote_agent.workloads.sources import hf_config, hf_masks
from remote_agent.workloads.under_test import Batch, ModelUnderTest, flatten_outputs, parameter_count

DEFAULT_SEQ_LEN = 128
TASK_CLASSES = {
    "base": [("AutoModel", "MODEL_MAPPING")],
    # Text classifiers classify sequences, image ones images (ViT): the first class the config has wins.
    "classification": [("AutoModelForSequenceClassification", "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING"),
                       ("AutoModelForImageClassification", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING")],
    "masked-lm": [("AutoModelForMaskedLM", "MODEL_FOR_MASKED_LM_MAPPING")],
    "causal-lm": [("AutoModelForCausalLM", "MODEL_FOR_CAUSAL_LM_MAPPING")],
}
# Keyword arguments of from_config rather than config fields.
BUILD_KWARGS = ("attn_implementation",)


def apply_overrides(config: Any, model_args: Dict[str, Any], name: str) -> Dict[str, Any]:
    """Set ``--model-arg`` config fields; return the from_config keyword arguments among them."""
    build_kwargs = {}
    known = set(config.to_dict())
    for key, value in model_args.items():
        if key in BUILD_KWARGS:
            build_kwargs[key] = value
            continue
        if key not in known and not hasattr(config, key):
            close = difflib.get_close_matches(key, sorted(known), n=3)
            raise SpecProblem("%s's config has no field %r%s" % (
                name, key, " (did you mean %s?)" % ", ".join(close) if close else ""))
        setattr(config, key, value)
    return build_kwargs


def task_class(config: Any, task: str) -> Optional[str]:
    """The transformers auto class that builds ``config`` for ``task``, or None when it has none."""
    from transformers.models.auto import modeling_auto

    for auto_class, mapping in TASK_CLASSES[task]:
        if type(config) in getattr(modeling_auto, mapping):
            return auto_class
    return None


def tasks_for(config: Any) -> List[str]:
    """The tasks this architecture has a transformers class for."""
    return [task for task in TASK_CLASSES if task_class(config, task)]


def max_positions(config: Any) -> Optional[int]:
    for key in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length"):
        value = getattr(config, key, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def build(name: str, spec: Any, seq_len: Optional[int]) -> ModelUnderTest:
    import torch
    import transformers

    config, origin = hf_config.load_config(name, spec.model_file)
    build_kwargs = apply_overrides(config, spec.model_args, name)
    task = spec.task or "base"
    available = tasks_for(config)
    if task not in available:
        raise SpecProblem("%s (%s) has no %s class in transformers %s: its tasks are %s"
                          % (name, config.model_type, task, transformers.__version__,
                             ", ".join(available) or "none of " + ", ".join(TASK_CLASSES)))
    notes: List[str] = []
    if task == "classification" and getattr(config, "pad_token_id", None) is None:
        # Sequence classification of decoder models finds the last token by the pad id.
        config.pad_token_id = getattr(config, "eos_token_id", None) or 0
    torch.manual_seed(spec.seed)
    auto_class = getattr(transformers, str(task_class(config, task)))
    try:
        module = auto_class.from_config(config, **build_kwargs)
    except (TypeError, ValueError) as exc:
        raise SpecProblem("%s could not be built as %s: %s" % (name, task, exc)) from exc

    main_input = getattr(module, "main_input_name", "input_ids")
    if main_input == "pixel_values":
        return _image_model(module, config, origin, name, task, notes, spec)
    if main_input != "input_ids":
        raise SpecProblem("%s takes %s: NeuronBench makes text (input_ids) and image (pixel_values) inputs, "
                          "not audio or other modalities yet" % (name, main_input))
    limit = max_positions(config)
    if seq_len is None:
        seq_len = min(DEFAULT_SEQ_LEN, limit) if limit else DEFAULT_SEQ_LEN
    elif limit and seq_len > limit:
        raise SpecProblem("--seq-len %d is past %s's maximum of %d positions (max_position_embeddings)"
                          % (seq_len, name, limit))
    vocab = int(config.vocab_size)
    accepted = list(inspect.signature(module.forward).parameters)
    wanted = ["input_ids", "attention_mask"]
    if (getattr(config, "type_vocab_size", 0) or 0) > 1 and "token_type_ids" in accepted:
        wanted.append("token_type_ids")
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in accepted:
        wanted.append("decoder_input_ids")
    # forward's own order: the names bind the trace wrapper's positional tensors.
    names = [p for p in accepted if p in wanted]
    num_labels = int(getattr(config, "num_labels", 2) or 2)

    def make_batch(batch_size: int, seed: int, labels: bool) -> Batch:
        ids = synthetic.token_ids(batch_size, seq_len, vocab, seed)
        tensors = {"input_ids": ids, "attention_mask": torch.ones_like(ids),
                   "token_type_ids": torch.zeros_like(ids),
                   "decoder_input_ids": synthetic.token_ids(batch_size, seq_len, vocab, seed + 1)}
        label = None
        if labels:
            # Causal LM: labels = input_ids, shifted inside the model; masked LM likewise (every
            # position scored); classification: one random class per sequence.
            label = (synthetic.class_labels(batch_size, num_labels, seed) if task == "classification"
                     else ids.clone() if task in ("masked-lm", "causal-lm") else None)
        return Batch(OrderedDict((n, tensors[n]) for n in names), label)

    loss = None
    if task == "base":
        notes.append("%s as a base model has no loss: training uses the mean square of its first output as "
                     "a stand-in (the same forward and backward work as a head's loss)" % name)
        loss = _stand_in_loss
    call_kwargs = {"return_dict": False}
    if getattr(config, "use_cache", None) is not None and "use_cache" in accepted:
        call_kwargs["use_cache"] = False
    describe = {"source": "hf", "name": name, "task": task, "class": type(module).__name__,
                "model_type": config.model_type, "parameters": parameter_count(module),
                "config": origin, "max_positions": limit,
                "libraries": {"transformers": transformers.__version__}}
    return ModelUnderTest(module, make_batch, describe, positional=False, loss=loss,
                          labels_kwarg="labels" if task != "base" else None, call_kwargs=call_kwargs,
                          seq_len=seq_len, notes=notes, input_names=names, tracing=hf_masks.traceable_masks)


def _image_model(module: Any, config: Any, origin: Dict[str, Any], name: str, task: str, notes: List[str],
                 spec: Any) -> ModelUnderTest:
    """A transformers vision model (ViT, ...): ``pixel_values`` from the config's image size."""
    import transformers

    if spec.seq_lens:
        raise SpecProblem("%s takes images (pixel_values): it has no sequence length, leave out --seq-len" % name)
    size = int(getattr(config, "image_size", 224))
    channels = int(getattr(config, "num_channels", 3))
    num_labels = int(getattr(config, "num_labels", 2) or 2)

    def make_batch(batch_size: int, seed: int, labels: bool) -> Batch:
        pixels = synthetic.images(batch_size, (channels, size, size), seed)
        label = synthetic.class_labels(batch_size, num_labels, seed) if labels and task == "classification" else None
        return Batch(OrderedDict([("pixel_values", pixels)]), label)

    loss = None if task == "classification" else _stand_in_loss
    if loss is not None:
        notes.append("%s as a %s model is trained on a stand-in loss (the mean square of its first output)"
                     % (name, task))
    describe = {"source": "hf", "name": name, "task": task, "class": type(module).__name__,
                "model_type": config.model_type, "parameters": parameter_count(module),
                "config": origin, "input_shape": [channels, size, size],
                "libraries": {"transformers": transformers.__version__}}
    return ModelUnderTest(module, make_batch, describe, positional=False, loss=loss,
                          labels_kwarg="labels" if task == "classification" else None,
                          call_kwargs={"return_dict": False}, notes=notes, input_names=["pixel_values"])


def _stand_in_loss(outputs: Any, batch: Batch) -> Any:
    first = flatten_outputs(outputs)[0]
    return first.float().pow(2).mean()
