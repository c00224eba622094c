"""Where the Neuron compiler caches NEFFs, and how much room is left there."""
from __future__ import annotations

import os
import shutil
from typing import Any, Dict, Optional, Tuple

DEFAULT_DIR = "/var/tmp/neuron-compile-cache"
URL_ENV = "NEURON_COMPILE_CACHE_URL"


def cache_location() -> Tuple[str, bool]:
    """The compile cache the Neuron compiler will use, and whether it is a local directory.

    Returns:
        (path_or_url, is_local): ``NEURON_COMPILE_CACHE_URL`` when set (``file://`` stripped),
        else ``/var/tmp/neuron-compile-cache``; an ``s3://`` URL is not local.
    """
    url = os.environ.get(URL_ENV, "").strip()
    if not url:
        return DEFAULT_DIR, True
    if url.startswith("file://"):
        return url[len("file://"):] or "/", True
    if "://" in url:
        return url, False
    return os.path.abspath(os.path.expanduser(url)), True


def _existing_parent(path: str) -> Optional[str]:
    # The cache directory is created on the first compile, so measure the disk it will land on.
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return path


def compile_cache(missing: Dict[str, str]) -> Dict[str, Any]:
    """``{"path": ..., "free_bytes": int | None}`` for the Neuron compile cache.

    Args:
        missing: receives ``compile_cache.free_bytes`` when free space cannot be measured.
    """
    path, local = cache_location()
    free = None  # type: Optional[int]
    if not local:
        missing["compile_cache.free_bytes"] = "the compile cache is remote (%s)" % path
    else:
        where = _existing_parent(path)
        try:
            if where is None:
                raise OSError("no existing parent directory")
            free = shutil.disk_usage(where).free
        except OSError as exc:
            missing["compile_cache.free_bytes"] = "cannot measure free space for %s: %s" % (path, exc)
    return {"path": path, "free_bytes": free}
