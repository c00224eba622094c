"""What ``--model`` names: a model source and the name, id or path within it (DESIGN.md §10).

    vit_base_patch16_224             timm (a bare name stays timm)
    timm:vit_base_patch16_224        timm.create_model(NAME, pretrained=False)
    torchvision:resnet50             torchvision.models.get_model(NAME, weights=None)
    hf:bert-large-uncased            a Hugging Face hub id: the host fetches its config.json
    hf:./configs/my-bert             a local config directory or config.json, sent with the spec
    file:models/net.py               the user's own file, sent with the spec; build() makes the model
    file:models/net.py:make_model    ... with another function name

Shared by the app (to check and attach files) and the agent (to build the model), so it is
stdlib-only and Python 3.8 compatible, and it never touches the filesystem.
"""
from __future__ import annotations

import re
from typing import Any, Dict, NamedTuple, Optional

SOURCES = ("timm", "torchvision", "hf", "file")
TASKS = ("base", "classification", "masked-lm", "causal-lm")
DEFAULT_FUNCTION = "build"
# A user's model file or a local config travels inside the run spec: big enough for any real model
# definition or config.json, small enough that the spec stays a quick message.
MODEL_FILE_MAX_BYTES = 512 * 1024
MAX_REF_CHARS = 1000

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TIMM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}$")
_TORCHVISION_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,99}$")
# Hub ids: "bert-large-uncased", "google/electra-large-discriminator" (owner/name, letters digits - _ .).
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95})?$")


class ModelRef(NamedTuple):
    source: str  # timm | torchvision | hf | file
    name: str  # the model name, hub id, or path as the user wrote it
    function: Optional[str] = None  # file: the builder function's name

    @property
    def is_hub_id(self) -> bool:
        """``hf:ID`` names a hub repository (not a path on the user's computer)."""
        return self.source == "hf" and looks_like_hub_id(self.name)

    def display(self) -> str:
        """The reference as it is written: ``hf:bert-large-uncased``, ``file:net.py:make``."""
        text = "%s:%s" % (self.source, self.name)
        if self.function and self.function != DEFAULT_FUNCTION:
            text += ":" + self.function
        return text


class ModelRefError(ValueError):
    """``--model`` cannot be read as a model source."""


def looks_like_hub_id(name: str) -> bool:
    """A hub id has at most one slash and no path syntax; anything else is a local path."""
    if name.startswith((".", "/", "~")) or name.endswith(".json") or "\\" in name:
        return False
    return bool(_HUB_ID.match(name))


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


def served_model_id(text: str) -> Optional[ModelRef]:
    """A serve run's --model for a server that is already given (--endpoint, --server-cmd): the model id as that
    server names it, any one-line string (``meta-llama/Llama-3.1-8B-Instruct``, a multi-model endpoint's alias),
    when it is not a model source; None when it is one (then ``parse_model_ref`` reads it)."""
    try:
        parse_model_ref(text)
        return None
    except ModelRefError:
        pass
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_REF_CHARS or _has_control(text):
        return None  # parse_model_ref's own sentence says what is wrong
    return ModelRef("id", text.strip())


def parse_model_ref(text: str) -> ModelRef:
    """Split ``--model`` into its source and name; raise ModelRefError with a sentence to act on."""
    if not isinstance(text, str) or not text.strip():
        raise ModelRefError("model is empty: name a timm model, or torchvision:NAME, hf:ID_OR_PATH or "
                            "file:PATH[:FUNCTION]")
    if len(text) > MAX_REF_CHARS or _has_control(text):
        raise ModelRefError("model must be one line of at most %d characters" % MAX_REF_CHARS)
    prefix, sep, rest = text.partition(":")
    if not sep or prefix not in SOURCES:
        if sep and prefix in ("hf-hub", "hf_hub"):
            raise ModelRefError("model %s: timm's hub models need weights from the hub; name the "
                                "architecture instead, or use hf:ID for a transformers model" % text)
        if sep and "/" not in prefix and "." not in prefix and prefix.isidentifier():
            raise ModelRefError("model %s: unknown source %r (use one of %s)"
                                % (text, prefix, ", ".join(s + ":" for s in SOURCES)))
        prefix, rest = "timm", text
    rest = rest.strip()
    if not rest:
        raise ModelRefError("model %s names no model after %r" % (text, prefix + ":"))
    if prefix == "timm":
        if not _TIMM_NAME.match(rest):
            raise ModelRefError("model %r is not a timm model name (letters, digits and _ . - only)" % rest)
        return ModelRef("timm", rest)
    if prefix == "torchvision":
        if not _TORCHVISION_NAME.match(rest):
            raise ModelRefError("model %r is not a torchvision model name (e.g. resnet50)" % rest)
        return ModelRef("torchvision", rest)
    if prefix == "hf":
        return ModelRef("hf", rest)
    path, function = rest, DEFAULT_FUNCTION
    head, sep, tail = rest.rpartition(":")
    if sep and _IDENTIFIER.match(tail) and head:
        path, function = head, tail
    if not path.endswith(".py"):
        raise ModelRefError("model %s: a model file is a Python file ending in .py (file:PATH.py[:FUNCTION])"
                            % text)
    return ModelRef("file", path, function)


def check_model_file(model_file: Any, source: str) -> None:
    """A model file travels as {name, sha256, text}: the text (<= MODEL_FILE_MAX_BYTES) is what runs."""
    if model_file is None:
        if source == "file":
            raise ModelRefError("a file: model needs its file's text in the spec (model_file)")
        return
    if source not in ("file", "hf"):
        raise ModelRefError("model_file goes with file: and hf: models only")
    if not isinstance(model_file, dict) or set(model_file) - {"name", "sha256", "text", "bytes"}:
        raise ModelRefError("model_file must be {name, sha256, text}")
    name, digest, text = model_file.get("name"), model_file.get("sha256"), model_file.get("text")
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", ".."):
        raise ModelRefError("model_file's name must be a plain file name, not %r" % (name,))
    if not isinstance(digest, str) or not _SHA256.match(digest):
        raise ModelRefError("model_file's sha256 must be 64 hex digits")
    if text is not None:
        if not isinstance(text, str):
            raise ModelRefError("model_file's text must be a string")
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > MODEL_FILE_MAX_BYTES:
            raise ModelRefError("model file %s is %d KiB, over the %d KiB a model file may have"
                                % (name, size // 1024, MODEL_FILE_MAX_BYTES // 1024))


def strip_model_file_text(spec: Dict[str, Any]) -> Dict[str, Any]:
    """A spec dict without its model file's text (kept: name, sha256 and the size in bytes)."""
    model_file = spec.get("model_file")
    if not isinstance(model_file, dict) or "text" not in model_file:
        return spec
    slim = {k: v for k, v in model_file.items() if k != "text"}
    if isinstance(model_file.get("text"), str):
        slim["bytes"] = len(model_file["text"].encode("utf-8", "surrogatepass"))
    return dict(spec, model_file=slim)
