"""The folder ``transformers serve`` loads: a config's model with random weights and a tokenizer built offline.

No weights are downloaded anywhere in NeuronBench (DESIGN.md §11): the agent builds the model from its config
(``from_config``, random weights), saves it, and writes a word-level tokenizer with ``tokenizers`` whose every
token is one CJK character.  That choice is deliberate:

- a prompt of S tokens is S characters, exactly, so the prompt length needs no server round trip;
- the client counts a response's tokens by its characters when the server sends no ``usage``
  (``transformers serve`` 4.x sends none; 5.x does);
- transformers 4.x's ``TextIteratorStreamer`` holds text back until a word ends, except after a CJK character,
  which it flushes at once: every token then leaves the server as its own chunk, as a token streamer should
  (5.x's server decodes token by token anyway).

The generation config has no EOS (``eos_token_id`` None), so every request runs to its ``max_tokens``.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional

from remote_agent.serving.char_tokens import UNKNOWN, vocabulary

CHAT_TEMPLATE = "{% for message in messages %}{{ message['content'] }}{% endfor %}"
MARKER = "neuronbench-model-folder.json"


def write_model_folder(config: Any, folder: str, seed: int = 0, weights: bool = True) -> Dict[str, Any]:
    """Save a random-weight model of ``config`` and its offline tokenizer into ``folder``; what was written.

    ``weights=False`` writes the config, generation config and tokenizer only (vLLM's ``--load-format dummy``
    makes its own random weights)."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    if not weights:
        config.save_pretrained(folder)
        generation = transformers.GenerationConfig(eos_token_id=None, pad_token_id=0, do_sample=False)
        generation.save_pretrained(folder)
    else:
        model = _random_model(config, seed)
        model.save_pretrained(folder)
    words = vocabulary(int(config.vocab_size))
    tokenizer = Tokenizer(models.WordLevel({word: i for i, word in enumerate(words)}, unk_token=UNKNOWN))
    # Each character is a token; decoding concatenates them (no spaces between CJK characters).
    tokenizer.pre_tokenizer = pre_tokenizers.Split(pattern="", behavior="isolated")
    tokenizer.decoder = decoders.Fuse()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token=UNKNOWN,
                                                chat_template=CHAT_TEMPLATE,
                                                # no token_type_ids: a causal LM's generate() refuses them
                                                model_input_names=["input_ids", "attention_mask"])
    fast.save_pretrained(folder)
    about = {"vocab_size": len(words), "tokenizer": "one CJK character per token (offline)",
             "weights": "random (seed %d)" % seed if weights else "made by the server (--load-format dummy)"}
    if weights:
        about.update(parameters=sum(p.numel() for p in model.parameters()), model_class=type(model).__name__)
    with open(os.path.join(folder, MARKER), "w") as handle:
        json.dump(about, handle)
    return about


def _random_model(config: Any, seed: int) -> Any:
    import torch
    import transformers

    torch.manual_seed(seed)
    architectures = getattr(config, "architectures", None) or []
    model_class = getattr(transformers, architectures[0], None) if architectures else None
    model = model_class(config) if model_class is not None else \
        transformers.AutoModelForCausalLM.from_config(config)
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = 0
    model.generation_config.do_sample = False
    return model


def folder_vocab(folder: str) -> Optional[int]:
    """The vocabulary size of a folder this module wrote (None for any other folder)."""
    try:
        with open(os.path.join(folder, MARKER)) as handle:
            return int(json.load(handle)["vocab_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def write_random_checkpoint(config: Any, folder: str, seed: int = 0,
                            shard_bytes: int = 2 * 1024 ** 3) -> Dict[str, Any]:
    """Random weights for ``config`` as a safetensors checkpoint in ``folder``, for servers that load a checkpoint
    and make no weights of their own (vLLM's NxDI plugin does not read ``--load-format dummy``).

    The model is built on the meta device (no memory) and each tensor is drawn as its shard is written, in the
    config's dtype: an 8B Llama is 16 GB of bfloat16, more than an inf2.xlarge's memory if made whole in fp32.
    Norm weights are ones and biases zeros (as a model's own init), the rest N(0, initializer_range)."""
    import torch
    import transformers
    from safetensors.torch import save_file

    # transformers 5 names it dtype, 4.56 torch_dtype (read from __dict__: v5 warns on the old name's property)
    dtype = getattr(config, "dtype", None) or vars(config).get("torch_dtype") or torch.float32
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype.replace("torch.", ""), torch.float32)
    architectures = getattr(config, "architectures", None) or []
    model_class = getattr(transformers, architectures[0], None) if architectures else None
    with torch.device("meta"):
        model = model_class(config) if model_class is not None else \
            transformers.AutoModelForCausalLM.from_config(config)
    params = list(model.named_parameters())  # a tied weight once (its first name), as save_pretrained keeps it
    width = torch.tensor([], dtype=dtype).element_size()
    shards: List[List[Any]] = [[]]
    size = 0
    for name, param in params:
        nbytes = param.numel() * width
        if shards[-1] and size + nbytes > shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append((name, param))
        size += nbytes
    std = float(getattr(config, "initializer_range", 0.02) or 0.02)
    generator = torch.Generator().manual_seed(seed)
    weight_map, total = {}, 0
    for index, shard in enumerate(shards):
        file = "model.safetensors" if len(shards) == 1 else "model-%05d-of-%05d.safetensors" % (index + 1, len(shards))
        tensors = {}
        for name, param in shard:
            if name.endswith(".bias"):
                tensor = torch.zeros(param.shape, dtype=dtype)
            elif param.dim() == 1 and "norm" in name:
                tensor = torch.ones(param.shape, dtype=dtype)
            else:
                tensor = torch.empty(param.shape, dtype=torch.float32).normal_(0.0, std, generator=generator).to(dtype)
            tensors[name] = tensor
            weight_map[name] = file
            total += tensor.numel() * width
        save_file(tensors, os.path.join(folder, file), metadata={"format": "pt"})
        del tensors
    if len(shards) > 1:
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as handle:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, handle, indent=1)
    kind = str(dtype).replace("torch.", "")
    return {"weights": "random (seed %d), a %s checkpoint written by the agent" % (seed, kind),
            "parameters": sum(p.numel() for _, p in params), "checkpoint_bytes": total,
            "model_class": type(model).__name__}
