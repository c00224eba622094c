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


# tests/data/models/paced.py: a step of about PACE_S seconds that costs almost no CPU, for the runs a test stops
# or cuts midway (cancel, Ctrl-C, dropped connections, killed nodes) rather than the tiny ViT training flat out.
PACED_MODEL = Path(__file__).resolve().parent / "data" / "models" / "paced.py"
PACE_S = 0.05


def paced_model_flags(pace_s: float = PACE_S) -> list[str]:
    return ["--model", f"file:{PACED_MODEL}", "--model-arg", f"pace_s={pace_s:g}"]


def paced_spec_fields(pace_s: float = PACE_S) -> dict:
    """RunSpec fields of the paced model, its file's text included (as the CLI sends it)."""
    from app.services.model_files import model_file_for

    model = f"file:{PACED_MODEL}"
    return {"model": model, "model_file": model_file_for(model), "model_args": {"pace_s": pace_s}}


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
