"""The host's cache of traced Neuron artefacts: compile once, load many times.

Neuron's persistent compile cache does not apply to ``torch_neuronx.trace`` ("traced graphs are not
cached", research/torchneuron.md §8): without this, every inference run traces again, tens of minutes
for a large model.  A saved artefact (``torch.jit.save`` of the traced module) is kept per host under
``<agent home>/traced-cache/<key>/traced.pt``, keyed by everything that changes the compiled graph:
the model's digest (structure and weights), the input shapes and dtypes, the compiler arguments and the
SDK (torch-neuronx and neuronx-cc versions).  Stdlib only at module level; torch inside functions.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional, Tuple

from remote_agent.rundir import agent_home

ARTEFACT = "traced.pt"
META = "key.json"


def cache_root() -> str:
    return os.path.join(agent_home(), "traced-cache")


def model_digest(model: Any) -> str:
    """SHA-256 of the module's structure (its repr) and every parameter and buffer (names, dtypes, bytes)."""
    import torch

    digest = hashlib.sha256()
    digest.update(type(model).__name__.encode("utf-8"))
    digest.update(repr(model).encode("utf-8"))
    for name in ("names", "kwargs"):  # the positional wrapper's binding (under_test.traceable)
        digest.update(repr(getattr(model, name, None)).encode("utf-8"))
    for name, tensor in sorted(model.state_dict(keep_vars=False).items()):
        digest.update(("%s %s %s" % (name, tensor.dtype, list(tensor.shape))).encode("utf-8"))
        data = tensor.detach().to("cpu").contiguous()
        if data.dtype == torch.bfloat16:
            data = data.view(torch.int16)  # numpy has no bfloat16: hash the same bits
        if data.numel():
            try:
                digest.update(data.numpy().tobytes())
            except RuntimeError:  # a torch built without numpy: the values' first two moments stand in for them
                wide = data.to(torch.float64)
                digest.update(("%r %r" % (float(wide.sum()), float((wide * wide).sum()))).encode("utf-8"))
    return digest.hexdigest()


def cache_key(model: Any, example: Tuple[Any, ...], compiler_args: List[str], sdk: Dict[str, Optional[str]]) \
        -> Tuple[str, Dict[str, Any]]:
    """``(key, what it was made of)``: a hex digest and the JSON-able fields behind it."""
    fields = {
        "model_sha256": model_digest(model),
        "inputs": [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")} for t in example],
        "compiler_args": list(compiler_args),
        "sdk": dict(sdk),
    }
    key = hashlib.sha256(json.dumps(fields, sort_keys=True).encode("utf-8")).hexdigest()[:32]
    return key, fields


def lookup(key: str) -> Optional[str]:
    """The cached artefact's path, or None when this key was never compiled here."""
    path = os.path.join(cache_root(), key, ARTEFACT)
    return path if os.path.isfile(path) else None


def store(key: str, fields: Dict[str, Any], artefact: str) -> Optional[str]:
    """Copy a saved artefact into the cache (atomically: a half-written entry is never seen); its path, or
    None when the cache cannot be written (a full disk costs the next run a compile, not this run)."""
    root = cache_root()
    final = os.path.join(root, key)
    try:
        os.makedirs(root, exist_ok=True)
        staging = tempfile.mkdtemp(prefix=".%s-" % key, dir=root)
        shutil.copyfile(artefact, os.path.join(staging, ARTEFACT))
        with open(os.path.join(staging, META), "w") as handle:
            json.dump(fields, handle, indent=1)
        try:
            os.rename(staging, final)
        except OSError:  # another run stored the same key meanwhile: keep theirs
            shutil.rmtree(staging, ignore_errors=True)
    except OSError:
        return None
    return os.path.join(final, ARTEFACT)
