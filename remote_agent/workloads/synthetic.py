"""Synthetic, shape-driven inputs: random images, random token ids, and fresh copies of a user's example.

Every function takes a ``seed`` and makes the same tensors for the same seed, on
the host, in fp32 (token ids and masks in int64): the run's first batch and the
numerical check's fresh inputs are different seeds of the same recipe.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple


def generator(seed: int) -> Any:
    import torch

    return torch.Generator().manual_seed(seed)


def images(batch: int, shape: Sequence[int], seed: int) -> Any:
    """``batch`` random images of ``shape`` (C, H, W), standard normal as the seed's FakeDataset."""
    import torch

    return torch.randn((batch,) + tuple(shape), generator=generator(seed), dtype=torch.float32)


def class_labels(batch: int, num_classes: int, seed: int) -> Any:
    import torch

    return torch.randint(0, max(1, num_classes), (batch,), generator=generator(seed + 7919), dtype=torch.int64)


def token_ids(batch: int, seq_len: int, vocab_size: int, seed: int) -> Any:
    """Random ids below the vocabulary size (as optimum-benchmark's text generator)."""
    import torch

    return torch.randint(0, vocab_size, (batch, seq_len), generator=generator(seed), dtype=torch.int64)


def like(example: Any, seed: int) -> Any:
    """A fresh tensor shaped and typed like ``example``, drawn within the range of its values.

    Floating tensors are redrawn uniformly between the example's smallest and largest
    value; integers likewise, as integers (token ids stay below the largest id the
    example used); a constant tensor (an all-ones mask) and booleans stay as they are.
    """
    import torch

    if example.dtype == torch.bool or example.numel() == 0:
        return example.clone()
    low, high = _range(example)
    if low == high:
        return example.clone()
    gen = generator(seed)
    if example.is_floating_point():
        fresh = torch.rand(example.shape, generator=gen, dtype=torch.float32) * (high - low) + low
        return fresh.to(example.dtype)
    if example.is_complex():
        return example.clone()
    return torch.randint(int(low), int(high) + 1, example.shape, generator=gen, dtype=torch.int64).to(example.dtype)


def _range(tensor: Any) -> Tuple[float, float]:
    values = tensor.detach().float() if tensor.is_floating_point() else tensor.detach()
    return float(values.min()), float(values.max())


def tiled_like(example: Any, batch: int, seed: int) -> Optional[Any]:
    """``like`` for a batch that is a whole multiple of the example's (None if it is not).

    Data-parallel inference feeds every NeuronCore one copy of the traced batch, so
    a request is several examples' worth, stacked along the batch dimension.
    """
    import torch

    if example.dim() == 0:
        return like(example, seed)
    rows = example.shape[0]
    if rows == batch:
        return like(example, seed)
    if rows == 0 or batch % rows:
        return None
    return torch.cat([like(example, seed + k) for k in range(batch // rows)], dim=0)
