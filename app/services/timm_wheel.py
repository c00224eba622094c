"""The timm wheel the app carries, for hosts that lack timm and have no internet.

timm is pure Python.  The app's own environment has it (the ``local`` extra pins
the version the Neuron SDK ships), so the wheel is rebuilt from that installed
distribution (its RECORD lists every file) into the app's cache.  A wheel put
in ``<cache>/wheels/`` by hand (``pip download timm --no-deps -d <cache>/wheels``)
is used instead when present.  Only timm itself is carried: its dependencies
(torch, torchvision) must be the host's own, matched to its accelerator, and the
optional ones (huggingface_hub, safetensors, pyyaml) are only needed for
pretrained weights, which the benchmarks do not load.
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from importlib import metadata
from pathlib import Path

_EPOCH = (1980, 1, 1, 0, 0, 0)


def carried_wheel(wheels_dir: Path) -> Path | None:
    """A timm wheel to upload: one found in ``wheels_dir``, else one built from the installed timm."""
    wheels_dir = Path(wheels_dir)
    found = sorted(wheels_dir.glob("timm-*-py3-none-any.whl")) if wheels_dir.is_dir() else []
    if found:
        return found[-1]
    try:
        dist = metadata.distribution("timm")
    except metadata.PackageNotFoundError:
        return None
    return _build(dist, wheels_dir / f"timm-{dist.version}-py3-none-any.whl")


def installed_timm_version() -> str | None:
    try:
        return metadata.version("timm")
    except metadata.PackageNotFoundError:
        return None


def _build(dist: metadata.Distribution, target: Path) -> Path | None:
    files = [f for f in (dist.files or []) if ".." not in f.parts and "__pycache__" not in f.parts
             and f.suffix != ".pyc"]
    if not any(f.parts[0] == "timm" for f in files):
        return None  # an editable or odd install: nothing we can pack
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    with os.fdopen(fd, "wb") as handle, zipfile.ZipFile(handle, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in sorted(f.as_posix() for f in files):
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, Path(dist.locate_file(name)).read_bytes())
    os.replace(tmp, target)
    return target
