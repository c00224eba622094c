"""Pick the backend a spec asks for, or the best present one for ``auto``."""
from __future__ import annotations

import importlib.util
from typing import Any

from remote_agent.backends.base import Backend, BackendUnavailable
from remote_agent.backends.cpu import CpuBackend
from remote_agent.backends.cuda import CudaBackend
from remote_agent.backends.neuron import NeuronBackend
from remote_agent.backends.neuron_native import NeuronNativeBackend
from remote_agent.backends.xla import XlaBackend
from remote_agent.neuron_stack import classify
from remote_agent.probe.neuron import device_files
from remote_agent.probe.packages import installed_version

BACKENDS = {"cpu": CpuBackend, "cuda": CudaBackend, "xla": XlaBackend, "neuron": NeuronBackend}


def auto_backend_name() -> str:
    """neuron if torch-neuronx and a Neuron device are here, else cuda if a GPU is usable, else cpu."""
    if importlib.util.find_spec("torch_neuronx") is not None and device_files():
        return "neuron"
    if importlib.util.find_spec("torch") is not None:
        import torch

        if torch.cuda.is_available():
            return "cuda"
    return "cpu"


def neuron_stack(spec: Any) -> str:
    """The stack ``--backend neuron`` runs: ``--neuron-stack`` when given, else the one this Python has."""
    if spec.neuron_stack:
        return spec.neuron_stack
    stack, _problem = classify(installed_version("torch"), installed_version("torch-neuronx"),
                               installed_version("torch-xla"))
    return stack or "xla"  # none at all: the XLA backend's check names what is missing


def resolve_backend(spec: Any) -> Backend:
    """Instantiate and check the spec's backend.  Raises BackendUnavailable with the reason."""
    name = auto_backend_name() if spec.backend == "auto" else spec.backend
    if name not in BACKENDS:
        raise BackendUnavailable("unknown backend %r" % (name,))
    if importlib.util.find_spec("torch") is None:
        raise BackendUnavailable("backend %s needs torch, which is not installed for this Python" % name)
    backend_class = BACKENDS[name]
    if name == "neuron" and neuron_stack(spec) == "native":
        backend_class = NeuronNativeBackend
    backend = backend_class(spec)
    backend.check()
    backend.setup_env()
    return backend
