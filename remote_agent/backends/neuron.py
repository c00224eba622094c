"""The neuron backend: torch-xla on NeuronCores for training, torch_neuronx.trace for inference."""
from __future__ import annotations

import glob
import importlib.util
import os
import sys
from typing import Any, Callable, Dict, Tuple

from remote_agent.backends.base import Backend, BackendUnavailable
from remote_agent.backends.xla import XlaBackend
from remote_agent.probe.neuron import device_files, device_glob
from remote_agent.probe.packages import DEFAULT_VENV_GLOB, VENV_GLOB_ENV


class NeuronBackend(XlaBackend):
    name = "neuron"

    def check(self) -> None:
        if importlib.util.find_spec("torch_neuronx") is None:
            pattern = os.environ.get(VENV_GLOB_ENV) or DEFAULT_VENV_GLOB
            venvs = sorted(glob.glob(pattern))
            where = ("found %s: set the host's Python to %s/bin/python" % (", ".join(venvs), venvs[-1])
                     if venvs else "found none")
            raise BackendUnavailable(
                "backend neuron needs torch-neuronx, which is not installed for %s; looked for Neuron venvs "
                "in %s (%s). Neuron SDK 2.32 and later no longer ship torch-neuronx: use SDK <= 2.31 "
                "(torch-neuronx 2.9 with torch-xla 2.9)" % (sys.executable, pattern, where))
        if not device_files():
            raise BackendUnavailable(
                "backend neuron found torch-neuronx but no Neuron device (%s is missing): "
                "run on a Trn1, Trn2 or Inf2 instance with the Neuron driver loaded" % device_glob())

    def setup_env(self) -> None:
        os.environ["PJRT_DEVICE"] = "NEURON"
        if self.spec.stochastic_rounding:
            os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"
        if self.spec.neuron_cc_flags:
            os.environ["NEURON_CC_FLAGS"] = self.spec.neuron_cc_flags
        if self.spec.compile_cache:
            os.environ["NEURON_COMPILE_CACHE_URL"] = self.spec.compile_cache

    def describe(self) -> Dict[str, Any]:
        import torch_neuronx

        # Traced inference runs the saved TorchScript artefact through the Neuron runtime, not on an
        # XLA device: asking torch-xla for one here would start a PJRT client that inference never uses.
        info = super().describe() if self.spec.workload == "train" else Backend.describe(self)
        if self.spec.workload != "train":
            info["device"] = "NeuronCore x%d (%s)" % (
                self.spec.nproc, "optimum-neuron" if self.spec.workload == "generate" else "torch_neuronx.trace")
        info["torch_neuronx"] = getattr(torch_neuronx, "__version__", None)
        info["visible_cores"] = os.environ.get("NEURON_RT_VISIBLE_CORES")
        return info

    def compile_for_inference(self, model: Any, example: Tuple[Any, ...], workdir: str,
                              tag: str) -> Callable[..., Any]:
        import torch
        import torch_neuronx  # before torch.jit.load: it registers the Neuron ops a saved artefact holds

        traced = torch_neuronx.trace(model, example)
        # The seed saves the traced model and loads it back: serving loads a saved
        # artefact, so we time what serving runs.
        path = os.path.join(workdir, "traced-%s.pt" % tag)
        torch.jit.save(traced, path)
        loaded = torch.jit.load(path)
        if self.spec.nproc > 1:
            # One copy per NeuronCore; each request feeds every core one batch.
            loaded = torch_neuronx.DataParallel(loaded, device_ids=list(range(self.spec.nproc)),
                                                set_dynamic_batching=False)

        def run(*inputs: Any) -> Any:
            with torch.no_grad():
                return loaded(*inputs)

        return run

    def inference_batch(self, batch_size: int) -> int:
        return batch_size * self.spec.nproc

    def generator(self, model: Any, shape: Any, pad_token_id: int, workdir: str, name: str) -> Any:
        """XLA-era SDK (<= 2.31): optimum-neuron's NeuronModelForCausalLM, tensor parallel over --nproc cores."""
        from remote_agent.backends.optimum_neuron import OptimumNeuronGenerator

        return OptimumNeuronGenerator(model, shape, pad_token_id, workdir, name, self.spec.nproc,
                                      self.spec.precision, _neuronx_cc_version())


def _neuronx_cc_version() -> Any:
    try:
        from importlib import metadata

        return metadata.version("neuronx-cc")
    except Exception:  # not installed (a stand-in host): the key says "none"
        return None
