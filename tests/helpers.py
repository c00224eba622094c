"""Constants and helpers shared by the tests (importable as ``tests.helpers``)."""
from __future__ import annotations

import os
from pathlib import Path

# The tiny ViT of DESIGN.md §7: real timm code, compiled and trained in seconds.
TINY_MODEL = "vit_tiny_patch16_224"
TINY_ARGS = ["img_size=32", "patch_size=8", "depth=2", "embed_dim=64", "num_heads=2"]


def tiny_model_flags() -> list[str]:
    flags = ["--model", TINY_MODEL]
    for arg in TINY_ARGS:
        flags += ["--model-arg", arg]
    return flags


def parent_pids() -> dict[int, int]:
    """pid -> parent pid of every process now (from /proc; processes that end meanwhile are left out)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            parents[int(name)] = int(stat[stat.rfind(")") + 2:].split()[1])
    return parents


def process_tree(root: int) -> set[int]:
    """``root`` and every process below it (following parents, so other sessions are included)."""
    parents = parent_pids()
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return tree
