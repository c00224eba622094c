"""Tracing a Hugging Face causal LM through the positional→named wrapper (remote_agent/workloads/under_test.py),
for real: tiny GPT-2 and Llama configs from tests/data/models, random weights, TorchScript on the CPU.

GPT-2's ``forward(input_ids, past_key_values, ...)`` (``cache`` in transformers 5) takes its cache second: a tracer
hands the wrapper ``(ids, mask)`` by position, and only binding them by name puts the mask where it belongs.
"""
from __future__ import annotations

import pytest
import torch

from app.services.model_files import model_file_for
from remote_agent.protocol import RunSpec
from remote_agent.workloads.sources import load_model
from remote_agent.workloads.under_test import traceable
from tests.conftest import DATA


def causal_lm(name: str, batch: int, seq_len: int):
    model = f"hf:{DATA / 'models' / name}"
    spec = RunSpec(workload="infer", model=model, model_file=model_file_for(model), task="causal-lm",
                   seq_lens=(seq_len,), batch_sizes=(batch,))
    mut = load_model(spec, batch, seq_len, "/tmp")
    mut.module.eval()
    return mut


@pytest.mark.parametrize("name, mask_second", [("tiny-gpt2", False), ("tiny-llama", True)])
def test_a_traced_causal_lm_returns_the_eager_models_logits_on_other_inputs(name, mask_second):
    import inspect

    mut = causal_lm(name, 2, 16)
    # GPT-2's second parameter is its cache (past_key_values in 4.x, cache in 5.x): bound by position, the mask
    # would land there; Llama's is the mask itself.
    assert (list(inspect.signature(mut.module.forward).parameters)[1] == "attention_mask") is mask_second
    assert mut.input_names == ["input_ids", "attention_mask"]
    example = mut.make_batch(2, 0, False).tensors()
    with mut.tracing(), torch.no_grad():
        traced = torch.jit.trace(traceable(mut), example, check_trace=False)
    for seed in (1, 2):
        batch = mut.make_batch(2, seed, False)
        with torch.no_grad():
            want = mut.module(**batch.inputs, use_cache=False).logits  # by name, as a user calls it
            got = traced(*batch.tensors())
        assert got[0].shape == (2, 16, 512)  # batch × sequence × vocabulary
        torch.testing.assert_close(got[0], want, rtol=1e-5, atol=1e-5)


def test_the_trace_friendly_masks_are_put_back_after_the_trace():
    """transformers 4.53-4.57 build causal masks with torch.vmap, which TorchScript cannot record: the broadcast
    mask goes in while tracing and the vmapped one comes back.  5.x masks without vmap by default: nothing swaps."""
    from transformers import masking_utils

    before = masking_utils.sdpa_mask
    before_sdpa = masking_utils.ALL_MASK_ATTENTION_FUNCTIONS["sdpa"]
    vmapped = getattr(masking_utils, "sdpa_mask_recent_torch", None)
    mut = causal_lm("tiny-gpt2", 1, 8)
    with mut.tracing():
        if vmapped is not None and before is vmapped:
            assert masking_utils.sdpa_mask is masking_utils.sdpa_mask_older_torch
            assert masking_utils.ALL_MASK_ATTENTION_FUNCTIONS["sdpa"] is masking_utils.sdpa_mask_older_torch
        else:
            assert masking_utils.sdpa_mask is before
            assert masking_utils.ALL_MASK_ATTENTION_FUNCTIONS["sdpa"] is before_sdpa
    # Eager models (the numerical check's reference, training) build their masks the library's own way again.
    assert masking_utils.sdpa_mask is before
    assert masking_utils.ALL_MASK_ATTENTION_FUNCTIONS["sdpa"] is before_sdpa
