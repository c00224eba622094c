"""An ``hf:`` model's config, and where it came from (the Result's ``model.config`` block).

Either the text the app sent with the spec (a local config.json, or one NeuronBench ships),
or, for a hub id, ``config.json`` fetched by the host from the hub (``HF_ENDPOINT`` where
set; never weights).  Both go through the same checks, and both are named by the SHA-256
of the exact bytes read, so a run can be told apart from one whose config changed since.
"""
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, Optional, Tuple

from remote_agent.workloads.problems import SpecProblem

NO_INTERNET_HINT = "a host without internet needs a local config: give hf:./DIR or hf:PATH/config.json"


def load_config(name: str, model_file: Optional[Dict[str, Any]]) -> Tuple[Any, Dict[str, Any]]:
    """(the transformers config, its origin): from the text the app sent, else fetched from the hub by the host."""
    if model_file is not None:
        if not isinstance(model_file.get("text"), str):
            raise SpecProblem("the config of %s did not reach the host (the spec carries no text)" % name)
        config = parse_config(name, model_file["text"], str(model_file.get("name")))
        return config, {"from": "spec", "file": model_file.get("name"), "sha256": model_file.get("sha256")}
    path = _download(name)
    with open(path, "rb") as handle:
        data = handle.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecProblem("%s's config.json from the hub is not UTF-8 text" % name) from None
    origin = {"from": "hub", "id": name, "sha256": hashlib.sha256(data).hexdigest()}
    # The hub's cache keeps a file under snapshots/<commit>/: the commit the config was read at.
    snapshot = os.path.dirname(path)
    if os.path.basename(os.path.dirname(snapshot)) == "snapshots":
        origin["revision"] = os.path.basename(snapshot)
    return parse_config(name, text, "config.json"), origin


def parse_config(name: str, text: str, file_name: str) -> Any:
    import transformers

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SpecProblem("%s's %s is not JSON: %s" % (name, file_name, exc)) from None
    if not isinstance(data, dict):
        raise SpecProblem("%s's %s is not a JSON object" % (name, file_name))
    model_type = data.get("model_type")
    if not model_type:
        raise SpecProblem("%s's %s has no model_type: transformers cannot tell which architecture it describes"
                          % (name, file_name))
    if model_type not in transformers.CONFIG_MAPPING:
        raise SpecProblem("%s's model_type %r is not known to transformers %s on this host"
                          % (name, model_type, transformers.__version__))
    return transformers.CONFIG_MAPPING[model_type].from_dict(data)


def _download(hub_id: str) -> str:
    """The local path of the hub's config.json for ``hub_id`` (the hub client's cache)."""
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(hub_id, "config.json")
    except Exception as exc:  # the hub client raises many kinds; tell them apart by name and status
        kind = type(exc).__name__
        status = getattr(getattr(exc, "response", None), "status_code", None)
        missing = kind in ("RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError")
        if missing or (status in (401, 404) and kind != "EntryNotFoundError"):
            raise SpecProblem("unknown Hugging Face model %r: the hub has no such repository (or it is private); "
                              "check the id, or give a local config directory (hf:./DIR)" % hub_id) from None
        if kind == "EntryNotFoundError":
            raise SpecProblem("the Hugging Face repository %r has no config.json: it holds no transformers model "
                              "NeuronBench can build; give a local config directory (hf:./DIR)" % hub_id) from None
        raise SpecProblem("the host could not fetch %s's config.json from the Hugging Face hub (%s): %s"
                          % (hub_id, _first_line(str(exc)) or kind, NO_INTERNET_HINT)) from None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else ""
