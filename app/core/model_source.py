"""A model reference as a form shows it: a source picked from a list, and the name, id or path within it.

``--model`` is one string (``hf:bert-large-uncased``, ``file:net.py:make``, a bare timm name); the
desktop app's form splits it into a source picker and a field, and joins them back the way the CLI
would spell it, so the same spec comes out of both (remote_agent/model_ref.py reads it on the host).
"""
from __future__ import annotations

from remote_agent.model_ref import SOURCES, TASKS

__all__ = ["SOURCES", "SOURCE_LABELS", "TASKS", "join_model", "split_model", "takes_seq_len", "takes_task"]

SOURCE_LABELS = {"timm": "timm", "torchvision": "torchvision", "hf": "Hugging Face", "file": "your file"}


def split_model(text: str) -> tuple[str, str]:
    """``hf:gpt2`` -> (``hf``, ``gpt2``); a bare name -> (``timm``, name); ``file:a.py:make`` keeps ``a.py:make``."""
    prefix, sep, rest = text.partition(":")
    if sep and prefix in SOURCES:
        return prefix, rest
    return "timm", text


def join_model(source: str, name: str) -> str:
    """The ``--model`` string: timm names stay bare (as the presets and stored runs spell them)."""
    return name if source == "timm" else f"{source}:{name}"


def takes_task(source: str) -> bool:
    """Only transformers models pick a head (``--task``); the other sources build their own."""
    return source == "hf"


def takes_seq_len(source: str) -> bool:
    """Text models have a sequence length: hf models, and a user's file whose function takes ``seq_len``."""
    return source in ("hf", "file")
