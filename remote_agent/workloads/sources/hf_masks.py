"""Attention masks a tracer can record, for Hugging Face decoders (GPT-2, Llama, ...).

transformers 4.53 and later build a decoder's causal mask with ``torch.vmap``, indexing
the padding mask inside the vmapped function.  ``torch.jit.trace`` (TorchScript on CPU,
the Neuron tracer) cannot record that: it stops with ``RuntimeError: unordered_map::at``
(transformers gave up its own TorchScript tests for it, PR #39307).  The same module
ships ``sdpa_mask_older_torch``, which vmaps only the causal pattern and applies the
padding mask by broadcasting; it builds the same boolean mask.  While a model is traced,
``traceable_masks`` puts that one in place; the numerical check then compares the
traced model with the eager one built the usual way, so a different mask would show.

Versions without vmap masks (before 4.53, or 5.x) have nothing to swap: it does nothing.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator


@contextlib.contextmanager
def traceable_masks() -> Iterator[None]:
    try:
        from transformers import masking_utils
    except ImportError:
        yield
        return
    broadcast = getattr(masking_utils, "sdpa_mask_older_torch", None)
    vmapped = getattr(masking_utils, "sdpa_mask_recent_torch", None)
    interface: Any = getattr(masking_utils, "ALL_MASK_ATTENTION_FUNCTIONS", None)
    if broadcast is None or vmapped is None or interface is None or masking_utils.sdpa_mask is not vmapped:
        yield
        return
    local = interface._local_mapping  # the shared instance's own overrides, put back as they were
    had, before = "sdpa" in local, local.get("sdpa")
    local["sdpa"] = broadcast          # what create_causal_mask looks up for attn_implementation="sdpa"
    masking_utils.sdpa_mask = broadcast  # what eager_mask calls for attn_implementation="eager"
    try:
        yield
    finally:
        masking_utils.sdpa_mask = vmapped
        if had:
            local["sdpa"] = before
        else:
            local.pop("sdpa", None)
