"""Versions of the ML packages, read from installed metadata without importing them.

Importing torch takes seconds and can fail in ways that say nothing about what
is installed, and importing torch_neuronx can start the Neuron runtime.  The
probe therefore only reads ``*.dist-info`` metadata, for this Python and for the
Neuron SDK's virtual environments.
"""
from __future__ import annotations

import glob
import os
import re
import sys
from typing import Any, Dict, List, Optional

try:
    from importlib import metadata as _metadata
except ImportError:  # pragma: no cover - Python 3.7 is older than the agent supports
    _metadata = None  # type: ignore[assignment]

# Probe key -> distribution name on PyPI / the Neuron pip repository.
PACKAGES = (
    ("torch", "torch"),
    ("torchvision", "torchvision"),
    ("timm", "timm"),
    ("transformers", "transformers"),
    ("torch_xla", "torch-xla"),
    ("torch_neuronx", "torch-neuronx"),
    ("neuronx_cc", "neuronx-cc"),
)
# Where a wheel records its full version: the metadata says "2.9.0" while
# torch.__version__ says "2.9.0+cu128", and the CUDA tag matters on a GPU host.
_VERSION_FILES = {"torch": "torch/version.py", "torchvision": "torchvision/version.py"}
_VERSION_RE = re.compile(r"""^__version__\s*=\s*['"]([^'"]+)['"]""", re.MULTILINE)
# The Neuron DLAMIs' PyTorch venvs: the XLA era's (SDK <= 2.31: aws_neuronx_venv_pytorch_2_9...) and
# TorchNeuron's (SDK 2.33: aws_neuronx_venv_torch_neuronx_2_14_0).  Several globs, space-separated.
DEFAULT_VENV_GLOB = "/opt/aws_neuronx_venv_pytorch_* /opt/aws_neuronx_venv_torch_neuronx_*"
VENV_GLOB_ENV = "NEURONBENCH_NEURON_VENV_GLOB"


def venv_globs() -> List[str]:
    """The venv patterns searched (``NEURONBENCH_NEURON_VENV_GLOB``, space-separated, or the DLAMIs')."""
    return (os.environ.get(VENV_GLOB_ENV) or DEFAULT_VENV_GLOB).split()


def _norm(name: str) -> str:
    """PEP 503 normalisation: torch_xla, Torch-XLA and torch.xla are one project."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _full_version(dist: Any, dist_name: str, version: str) -> str:
    relpath = _VERSION_FILES.get(dist_name)
    if not relpath:
        return version
    try:
        with open(str(dist.locate_file(relpath)), encoding="utf-8") as handle:
            match = _VERSION_RE.search(handle.read())
    except (OSError, ValueError):
        return version
    # Only trust the file if it extends the metadata version (same release).
    if match and match.group(1).startswith(version):
        return match.group(1)
    return version


def installed_version(dist_name: str) -> Optional[str]:
    """The installed version of `dist_name` for this Python, or None if it is not installed."""
    if _metadata is None:
        return None
    try:
        dist = _metadata.distribution(dist_name)
        version = dist.version
    except Exception:  # PackageNotFoundError, or a broken dist-info: both mean "not usable"
        return None
    if not version:
        return None
    return _full_version(dist, dist_name, version)


def installed_versions(missing: Dict[str, str]) -> Dict[str, Optional[str]]:
    """Versions of torch, torchvision, timm, transformers, torch_xla, torch_neuronx and neuronx_cc.

    Args:
        missing: receives ``"not installed for <python>"`` for each absent package.

    Returns:
        Probe key -> version string or None.
    """
    versions = {}  # type: Dict[str, Optional[str]]
    for key, dist_name in PACKAGES:
        versions[key] = installed_version(dist_name)
        if versions[key] is None:
            missing[key] = "not installed for %s" % sys.executable
    return versions


def _site_versions(venv: str, wanted: Dict[str, str]) -> Dict[str, Optional[str]]:
    """Versions of the `wanted` distributions (normalised name -> key) in a venv's site-packages."""
    found = {key: None for key in wanted.values()}  # type: Dict[str, Optional[str]]
    if _metadata is None:
        return found
    for site in sorted(glob.glob(os.path.join(venv, "lib", "python*", "site-packages"))):
        try:
            dists = list(_metadata.distributions(path=[site]))
        except Exception:  # an unreadable site-packages is "nothing found there"
            continue
        for dist in dists:
            try:
                name, version = dist.metadata["Name"], dist.version
            except Exception:
                continue
            key = wanted.get(_norm(name or ""))
            if key and version and found[key] is None:
                found[key] = version
    return found


def _venv_python(venv: str) -> Optional[str]:
    for name in ("python3", "python"):
        path = os.path.join(venv, "bin", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def neuron_venvs(missing: Dict[str, str]) -> List[Dict[str, Optional[str]]]:
    """The Neuron SDK's PyTorch venvs (DLAMI layout) and what each has installed.

    The glob is ``/opt/aws_neuronx_venv_pytorch_*`` unless ``NEURONBENCH_NEURON_VENV_GLOB``
    says otherwise.

    Returns:
        One dict per venv directory: path, python (None if it has no interpreter),
        torch_neuronx, torch_xla and torch versions (None if absent).
    """
    patterns = venv_globs()
    wanted = {"torch-neuronx": "torch_neuronx", "torch-xla": "torch_xla", "torch": "torch"}
    venvs = []
    for path in sorted(set(p for pattern in patterns for p in glob.glob(pattern))):
        if not os.path.isdir(path):
            continue
        entry = {"path": path, "python": _venv_python(path)}  # type: Dict[str, Optional[str]]
        entry.update(_site_versions(path, wanted))
        venvs.append(entry)
    if not venvs:
        missing["neuron_venvs"] = "no Neuron venv matches %s" % " ".join(patterns)
    return venvs
