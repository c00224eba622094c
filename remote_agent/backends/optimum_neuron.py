"""Generation on the XLA-era Neuron SDK (<= 2.31; Inf2, Trn1, Trn2): optimum-neuron's ``NeuronModelForCausalLM``.

A Neuron decoder is compiled for one static batch size and one sequence length (prompt + new tokens),
sharded over ``--nproc`` NeuronCores (tensor parallel).  Compiling takes minutes to hours, so the compiled
model is kept on the host, named by what it was compiled from: the model's config digest, the shape, the
degree, the dtype and the SDK (neuronx-cc and optimum-neuron versions).  The second run with the same key
loads in seconds ("cache": "hit").

The random-weight model is saved once (in the run's dtype) into the export folder, exported, saved, then loaded
back: cold and warm runs time the same artefact.  Exporting is optimum-neuron 0.4's two calls
(optimum/neuron/models/inference/modeling_utils.py): ``get_neuron_config(folder, batch_size=, sequence_length=,
tensor_parallel_size=)`` (the dtype is the saved config's; 0.4.0 also takes ``auto_cast_type``), then
``export(folder, neuron_config, load_weights=False)``.  From 0.4 on, ``from_pretrained`` only loads: it drops
``export=True`` and the shape with a warning and then looks for a ``neuron_config.json`` the folder lacks.  The
releases before 0.4 exported through ``from_pretrained(export=True, num_cores=, auto_cast_type=)`` but pin
transformers 4.51 or older, below the oldest NeuronBench supports (workloads/sources/hf_version.py): they are refused in
one sentence, as is a release whose ``NeuronModelForCausalLM`` lacks the two calls.

Its rules, which the scenario already keeps (and tests/doubles' stand-in enforces): a batch or length past
the compiled one is refused; no left padding; under on-device sampling logits processors do not run, so
``min_new_tokens`` has no effect: EOS is switched off instead; stopping criteria still run every step.
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import shutil
import sys
import time
from typing import Any, Dict, Optional

from remote_agent.backends.base import BackendUnavailable
from remote_agent.backends.generation import Generator, Shape, fixed_length

CACHE_ENV = "NEURONBENCH_NEURON_MODEL_CACHE"
# A run from the app over SSH is stopped before it starts and offered the install (app/services/host_libraries);
# this sentence is for the runs that get here: on this computer (--host local), or by hand.
INSTALL_HINT = ("install it into that Python on the host with `python -m pip install optimum-neuron "
                "--extra-index-url https://pip.repos.neuron.amazonaws.com` (the Neuron venv of SDK 2.31 or older), "
                "or for the agent only from the app with `neuronbench hosts test HOST --install optimum-neuron`")


def optimum_neuron_version() -> Optional[str]:
    """optimum-neuron's version on this host, or None when it is not installed."""
    import importlib.util

    if importlib.util.find_spec("optimum") is None or importlib.util.find_spec("optimum.neuron") is None:
        return None
    try:
        from importlib import metadata

        return metadata.version("optimum-neuron")
    except Exception:  # a stand-in or a source checkout: its module says
        import optimum.neuron as on

        return str(getattr(on, "__version__", "unknown"))


def cache_root() -> str:
    return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "neuronbench",
                                                     "neuron-models")


EXPORT_API_SINCE = (0, 4)  # get_neuron_config + export; from_pretrained loads only


def _major_minor(version: str) -> tuple:
    parts = []
    for piece in version.split("+")[0].split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


def shape_kwargs(get_neuron_config: Any, batch: int, total_len: int, degree: int, precision: str) -> Dict[str, Any]:
    """``get_neuron_config``'s keywords: the point's static shape and degree; 0.4.0's ``auto_cast_type`` where the
    installed release still takes it (0.4.5 reads the dtype from the saved config instead)."""
    kwargs: Dict[str, Any] = {"batch_size": batch, "sequence_length": total_len, "tensor_parallel_size": degree}
    try:
        accepted = inspect.signature(get_neuron_config).parameters
    except (TypeError, ValueError):
        accepted = {}  # type: ignore[assignment]
    if "auto_cast_type" in accepted:
        kwargs["auto_cast_type"] = "bf16" if precision == "bf16" else "fp32"
    return kwargs


class OptimumNeuronGenerator(Generator):
    """``NeuronModelForCausalLM`` at the sweep point's batch and sequence length, ``degree`` NeuronCores."""

    cache = "static (compiled)"

    def __init__(self, model: Any, shape: Shape, pad_token_id: int, workdir: str, name: str, degree: int,
                 precision: str, sdk: Optional[str]) -> None:
        super().__init__(model, "cpu", shape, pad_token_id)
        version = optimum_neuron_version()
        if version is None:
            raise BackendUnavailable("backend neuron generates through optimum-neuron, which is not installed for "
                                     "%s: %s" % (sys.executable, INSTALL_HINT))
        if _major_minor(version) < EXPORT_API_SINCE:
            raise BackendUnavailable(
                "optimum-neuron %s is installed for %s, and NeuronBench needs optimum-neuron 0.4 or later: it exports "
                "through NeuronModelForCausalLM.get_neuron_config and export, which came in 0.4 (the releases before "
                "pin transformers 4.51 or older): install optimum-neuron 0.4 or later in that Python" % (
                    version, sys.executable))
        from optimum.neuron import NeuronModelForCausalLM

        lacking = [name for name in ("get_neuron_config", "export")
                   if not callable(getattr(NeuronModelForCausalLM, name, None))]
        if lacking:
            raise BackendUnavailable(
                "optimum-neuron %s for %s has no NeuronModelForCausalLM.%s, and NeuronBench exports through "
                "get_neuron_config and export (optimum-neuron 0.4.0 to 0.4.5 have both): install one of those "
                "releases in that Python" % (version, sys.executable, " or .".join(lacking)))
        self.version, self.degree, self.precision, self.sdk = version, degree, precision, sdk
        self.workdir, self.name = workdir, name
        self.stack = "optimum-neuron %s NeuronModelForCausalLM, tensor parallel %d" % (version, degree)
        self.export_s = 0.0
        self.cache_state = "miss"
        self.cache_dir = os.path.join(cache_root(), self.key())

    def key(self) -> str:
        """Model (its config's digest), shape, degree, dtype and SDK: one compiled artefact each."""
        config = getattr(self.model, "config", None)
        text = config.to_json_string(use_diff=False) if config is not None else self.name
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in self.name.split(":")[-1])[-40:]
        return "%s-%s-b%d-s%d-tp%d-%s-on%s-cc%s" % (safe, digest, self.shape.batch, self.shape.total_len,
                                                    self.degree, self.precision, self.version, self.sdk or "none")

    def load(self) -> None:
        from optimum.neuron import NeuronModelForCausalLM

        if os.path.isdir(self.cache_dir) and os.path.exists(os.path.join(self.cache_dir, "neuronbench.json")):
            self.cache_state = "hit"
        else:
            started = time.perf_counter()
            source = os.path.join(self.workdir, "random-weights")
            fixed_length(self.model, self.pad_token_id)
            # The folder the export reads: the random weights and their config, whose dtype the export takes.
            self.model.save_pretrained(source)
            shape = shape_kwargs(NeuronModelForCausalLM.get_neuron_config, self.shape.batch, self.shape.total_len,
                                 self.degree, self.precision)
            neuron_config = NeuronModelForCausalLM.get_neuron_config(source, **shape)
            exported = NeuronModelForCausalLM.export(source, neuron_config, load_weights=False)
            partial = self.cache_dir + ".partial-%d" % os.getpid()
            exported.save_pretrained(partial)  # the compiled model, and the source folder's weights beside it
            with open(os.path.join(partial, "neuronbench.json"), "w") as handle:
                json.dump({"key": self.key(), "get_neuron_config": shape}, handle)
            if os.path.isdir(self.cache_dir):
                shutil.rmtree(self.cache_dir)
            os.replace(partial, self.cache_dir)  # whole or absent: a killed export leaves no half artefact
            shutil.rmtree(source, ignore_errors=True)
            del exported
            self.export_s = time.perf_counter() - started
        self.model = NeuronModelForCausalLM.from_pretrained(self.cache_dir)
        fixed_length(self.model, self.pad_token_id)

    def compile_seconds(self) -> Optional[float]:
        return self.export_s

    def describe(self) -> Dict[str, Any]:
        return {"stack": self.stack, "cache": self.cache, "compile_cache": self.cache_state,
                "compiled_model": self.cache_dir, "optimum_neuron": self.version, "tensor_parallel": self.degree}

    def generate_kwargs(self) -> Dict[str, Any]:
        kwargs = super().generate_kwargs()
        kwargs.pop("use_cache", None)
        kwargs.pop("num_beams", None)
        return kwargs

    def generate(self, ids: Any, mask: Any, stopping: Any, logits: bool = False) -> Any:
        import torch
        from transformers import StoppingCriteriaList

        with torch.no_grad():
            out = self.model.generate(input_ids=ids, attention_mask=mask, stopping_criteria=StoppingCriteriaList(
                stopping), **self.generate_kwargs())
        # Under on-device sampling the model hands back token ids only: no logits to compare.
        return (out, None) if logits else out
