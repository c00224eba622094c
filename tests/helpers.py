"""Constants and helpers shared by the tests (importable as ``tests.helpers``)."""
from __future__ import annotations

# The tiny ViT of DESIGN.md §7: real timm code, compiled and trained in seconds.
TINY_MODEL = "vit_tiny_patch16_224"
TINY_ARGS = ["img_size=32", "patch_size=8", "depth=2", "embed_dim=64", "num_heads=2"]


def tiny_model_flags() -> list[str]:
    flags = ["--model", TINY_MODEL]
    for arg in TINY_ARGS:
        flags += ["--model-arg", arg]
    return flags
