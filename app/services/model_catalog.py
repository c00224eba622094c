"""The model names a model picker offers (timm's, and torchvision's classification models), read without
importing timm, torchvision (or torch) into the app.

``timm.list_models()`` needs ``import timm``, which imports torch: seconds of
CPU and hundreds of MB the desktop app has no other use for.  So the names come
from a short subprocess of the ``local`` host's Python, and are cached per
(python, timm version) for a week; a stale or missing cache is refreshed.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from app.core.errors import NeuronBenchError

CACHE_MAX_AGE_S = 7 * 24 * 3600
LIST_TIMEOUT_S = 120.0
# torchvision is optional for the list: without it, timm's names still come (and its picker says why not).
_SCRIPT = """import json, timm
out = {'timm': timm.__version__, 'models': timm.list_models()}
try:
    import torchvision
    from torchvision import models
    out['torchvision'] = torchvision.__version__
    out['torchvision_models'] = models.list_models(module=models)
except Exception as exc:
    out['torchvision'], out['torchvision_models'] = '', []
    out['torchvision_error'] = '%s: %s' % (type(exc).__name__, exc)
print(json.dumps(out))
"""


@dataclass(frozen=True)
class ModelCatalog:
    names: tuple[str, ...]
    timm_version: str
    python: str
    torchvision_names: tuple[str, ...] = ()  # its classification models (torchvision.models' own module)
    torchvision_version: str = ""
    torchvision_error: str = ""


def _cache_file(cache_dir: Path) -> Path:
    return Path(cache_dir) / "timm-models.json"


def _read_cache(cache_dir: Path, python: str) -> ModelCatalog | None:
    path = _cache_file(cache_dir)
    try:
        if time.time() - path.stat().st_mtime > CACHE_MAX_AGE_S:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("python") != python or not isinstance(data.get("models"), list) or \
            not isinstance(data.get("torchvision_models"), list):  # a cache from before torchvision's names
        return None
    return _catalog(data, python)


def _catalog(data: dict, python: str) -> ModelCatalog:
    return ModelCatalog(tuple(data["models"]), str(data.get("timm", "")), python,
                        tuple(data.get("torchvision_models") or ()), str(data.get("torchvision") or ""),
                        str(data.get("torchvision_error") or ""))


def _write_cache(cache_dir: Path, catalog: ModelCatalog) -> None:
    path = _cache_file(cache_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump({"python": catalog.python, "timm": catalog.timm_version, "models": list(catalog.names),
                   "torchvision": catalog.torchvision_version, "torchvision_models": list(catalog.torchvision_names),
                   "torchvision_error": catalog.torchvision_error}, handle)
    os.replace(tmp, path)


def load_model_catalog(python: str, cache_dir: Path, refresh: bool = False) -> ModelCatalog:
    """timm's model names as seen by ``python``; blocking (call it from a worker thread).

    Raises NeuronBenchError with a sentence when that Python has no timm.
    """
    if not refresh:
        cached = _read_cache(cache_dir, python)
        if cached is not None:
            return cached
    try:
        proc = subprocess.run([python, "-c", _SCRIPT], capture_output=True, text=True, timeout=LIST_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NeuronBenchError(f"could not list timm models with {python}: {exc}") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["it printed nothing"])[-1]
        raise NeuronBenchError(f"could not list timm models with {python}: {last}", detail=proc.stderr[-4000:])
    try:
        data = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise NeuronBenchError(f"could not list timm models with {python}: unexpected output",
                               detail=proc.stdout[-4000:]) from None
    catalog = _catalog(data, python)
    _write_cache(cache_dir, catalog)
    return catalog
