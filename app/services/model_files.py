"""The file a model reference brings with it: a user's model file, or the config of an ``hf:`` model.

``file:PATH`` and ``hf:LOCAL_PATH`` name files on this computer: their text travels inside the run
spec (``model_file``: name, sha256, text), so the host needs neither the file nor internet.  An
``hf:ID`` whose config ships with NeuronBench (resources/models/ID/config.json: the presets' models)
sends that; any other hub id sends nothing and the host fetches the config itself.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from app.core.errors import BadSpecError
from app.paths import resources_dir
from remote_agent.model_ref import MODEL_FILE_MAX_BYTES, ModelRefError, parse_model_ref


def shipped_config(hub_id: str) -> Path | None:
    """resources/models/<hub id>/config.json, if NeuronBench ships that model's config."""
    path = resources_dir() / "models" / Path(*hub_id.split("/")) / "config.json"
    return path if path.is_file() else None


def _attachment(path: Path, what: str) -> dict[str, Any]:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise BadSpecError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    if size > MODEL_FILE_MAX_BYTES:
        raise BadSpecError(f"{what} {str(path)!r} is {size // 1024} KiB, over the "
                           f"{MODEL_FILE_MAX_BYTES // 1024} KiB a model file may have: a model file defines the "
                           f"model, its weights are random")
    try:
        data = path.read_bytes()
        text = data.decode("utf-8")
    except OSError as exc:
        raise BadSpecError(f"cannot read {what} {str(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise BadSpecError(f"{what} {str(path)!r} is not UTF-8 text") from None
    return {"name": path.name, "sha256": hashlib.sha256(data).hexdigest(), "text": text}


def model_file_for(model: str, base: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The ``model_file`` a spec for ``model`` must carry (None: the host needs nothing from here).

    Relative paths are read from ``base`` (the working directory by default).  Raises BadSpecError
    with one sentence: a missing file, a folder without config.json, a file over the size limit.
    """
    found = locate_model_file(model, base)
    return None if found is None else _attachment(*found)


def locate_model_file(model: str, base: str | os.PathLike[str] | None = None) -> tuple[Path, str] | None:
    """Which file on this computer ``model`` brings, and what to call it in a message; no file is read.

    Raises BadSpecError as ``model_file_for`` does for a path that is missing or a folder without config.json.
    """
    try:
        ref = parse_model_ref(model)
    except ModelRefError as exc:
        raise BadSpecError(str(exc)) from None
    if ref.source not in ("file", "hf"):
        return None
    if ref.is_hub_id:
        shipped = shipped_config(ref.name)
        if shipped is not None:
            return shipped, "the shipped config"
        local = Path(base or ".") / ref.name
        if not local.exists():
            return None  # a hub id: the host fetches its config.json
    path = Path(os.path.expanduser(ref.name))
    if not path.is_absolute():
        path = Path(base or ".") / path
    if ref.source == "file":
        if not path.exists():
            raise BadSpecError(f"model file {ref.name!r} does not exist (looked at {str(path)!r})")
        if not path.is_file():
            raise BadSpecError(f"model file {ref.name!r} is not a file")
        return path, "model file"
    if path.is_dir():
        config = path / "config.json"
        if not config.is_file():
            raise BadSpecError(f"{'hf:' + ref.name!r} is a folder without config.json: give the folder a "
                               f"Hugging Face model was saved to, or the config.json itself")
        return config, "config"
    if not path.exists():
        raise BadSpecError(f"{'hf:' + ref.name!r} is neither a hub id nor a config on this computer "
                           f"(looked at {str(path)!r})")
    return path, "config"


def shipped_hub_ids() -> list[str]:
    """The hub ids whose config ships with NeuronBench (resources/models/<id>/config.json), sorted."""
    root = resources_dir() / "models"
    return sorted(config.parent.relative_to(root).as_posix() for config in root.glob("**/config.json"))


class ModelFileCache:
    """``model_file_for`` for a form checked at every keystroke: a file is read again only when its size or
    modification time changed (a stat per check, not a read of up to 512 KiB)."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[tuple[int, int], dict[str, Any]]] = {}

    def model_file_for(self, model: str, base: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
        found = locate_model_file(model, base)
        if found is None:
            return None
        path, what = found
        try:
            stat = path.stat()
        except OSError:
            return _attachment(path, what)  # gone between the two looks: the read says so in one sentence
        key, stamp = str(path), (stat.st_mtime_ns, stat.st_size)
        seen = self._seen.get(key)
        if seen is not None and seen[0] == stamp:
            return seen[1]
        attachment = _attachment(path, what)
        self._seen = {key: (stamp, attachment)}  # one file at a time: the one in the form
        return attachment
