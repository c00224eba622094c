"""One place that turns a model source (``--model``) into the model under test (DESIGN.md §10).

Each source imports its library only when it is used: the agent loads this package
on hosts that have torch but not transformers, or timm but not torchvision.
"""
from __future__ import annotations

from typing import Any, Optional

from remote_agent.model_ref import parse_model_ref
from remote_agent.workloads.problems import SpecProblem
from remote_agent.workloads.under_test import ModelUnderTest

# What each source imports (timm imports torchvision as it loads).
LIBRARIES = {"timm": ("timm", "torchvision"), "torchvision": ("torchvision",), "hf": ("transformers",),
             "file": ("torch",)}


def load_model(spec: Any, batch_size: int, seq_len: Optional[int], workdir: str) -> ModelUnderTest:
    """The model of ``spec`` with random weights, in fp32 on the host, and its input recipe.

    ``batch_size`` matters to a user's file (its function makes inputs for it); ``seq_len``
    is None for the model's default length (text models) or a model without one.
    """
    ref = parse_model_ref(spec.model)
    _need_library(ref.source)
    if ref.source in ("timm", "torchvision"):
        from remote_agent.workloads.sources import timm_source, torchvision_source

        try:
            mut = (timm_source if ref.source == "timm" else torchvision_source).build(ref.name, spec)
        except RuntimeError as exc:
            problem = _torchvision_mismatch(exc)
            if problem is None:
                raise
            raise problem from exc
    elif ref.source == "hf":
        from remote_agent.workloads.sources import hf_source

        mut = hf_source.build(ref.name, spec, seq_len)
    else:
        from remote_agent.workloads.sources import file_source

        mut = file_source.build(ref.name, ref.function or "build", spec, batch_size, seq_len, workdir)
    mut.module.float()
    return mut


def _need_library(source: str) -> None:
    import importlib.util
    import sys

    for library in LIBRARIES[source]:
        if importlib.util.find_spec(library) is None:
            raise SpecProblem("%s: models need %s, which is not installed for %s: install it with `neuronbench "
                              "hosts test HOST --install %s`, or pip install it for that Python"
                              % (source, library, sys.executable, library))
    if source == "hf":
        from remote_agent.workloads.sources.hf_version import require_transformers

        require_transformers("hf: models")


def _torchvision_mismatch(exc: Exception) -> Optional[SpecProblem]:
    """The sentence for a torchvision built for another torch (PyPI's CUDA build beside a CPU torch, as on a
    TorchNeuron host whose torch came from PyTorch's CPU index): its C++ ops do not load, and its import then
    fails registering ``torchvision::nms``.  None for any other error."""
    text = str(exc)
    if "torchvision::" not in text or "does not exist" not in text:
        return None
    from remote_agent.probe.packages import installed_version

    torch_version = installed_version("torch") or "?"
    found = installed_version("torchvision") or "?"
    parts = torch_version.split("+")[0].split(".")
    wanted = "0.%d" % (int(parts[1]) + 15) if len(parts) > 1 and parts[0] == "2" and parts[1].isdigit() else None
    index = " --index-url https://download.pytorch.org/whl/cpu" if "+cpu" in torch_version else ""
    return SpecProblem(
        "torchvision %s does not load beside torch %s (%s: its C++ ops were built for another torch): install "
        "the torchvision built for this torch, pip install torchvision%s%s"
        % (found, torch_version, text.splitlines()[0][:120], "==%s.*" % wanted if wanted else "", index))
