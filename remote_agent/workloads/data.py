"""The seed's random-image dataset (FakeDataset), without importing torch at module level.

torch's DataLoader accepts any object with ``__len__`` and ``__getitem__``, so the
class does not inherit ``torch.utils.data.Dataset`` and this module stays
importable on a host without torch.
"""
from __future__ import annotations

from typing import Any, Tuple


class FakeDataset:
    """``length`` random 3xHxW images, label ``index % num_classes`` (as in the seed)."""

    def __init__(self, length: int, image_shape: Tuple[int, int, int], num_classes: int) -> None:
        self.length = length
        self.image_shape = tuple(image_shape)
        self.num_classes = num_classes

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> Any:
        import torch

        image = torch.randn(self.image_shape, dtype=torch.float32)
        label = torch.tensor(index % self.num_classes, dtype=torch.int64)
        return image, label
