"""The neuron backend's XLA stack (Inf2/Trn1, Neuron SDK <= 2.31): torch-xla on NeuronCores for training,
torch_neuronx.trace for inference.  TorchNeuron (Trn2/Trn3, SDK 2.33) is neuron_native.py.

The compiler flags reach each path through its own channel: NEURON_CC_FLAGS for the XLA training path's
compile cache wrapper, ``compiler_args`` for ``torch_neuronx.trace`` (which never reads NEURON_CC_FLAGS).
Traced artefacts are kept per host (trace_cache.py): Neuron's compile cache does not apply to trace.
"""
from __future__ import annotations

import glob
import importlib.util
import os
import shlex
import shutil
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from remote_agent.backends import trace_cache
from remote_agent.backends.base import Backend, BackendUnavailable
from remote_agent.backends.xla import XlaBackend
from remote_agent.probe.neuron import device_files, device_glob
from remote_agent.probe.packages import installed_version, venv_globs


def compiler_args(flags: str) -> List[str]:
    """``--neuron-cc-flags`` as the argument list neuronx-cc gets (shell quoting, as NEURON_CC_FLAGS is read)."""
    return shlex.split(flags or "")


def compiler_line(workdir: str, since: Optional[float] = None) -> Optional[str]:
    """The compiler's own error line from the log it left in ``workdir`` (None when it left none, or, with
    ``since``, only an older one: another compile's)."""
    for name in ("log-neuron-cc.txt", "neuronx-cc.log"):
        path = os.path.join(workdir, name)
        try:
            if since is not None and os.path.getmtime(path) < since:
                continue
            with open(path, errors="replace") as handle:
                lines = [line.strip() for line in handle if line.strip()]
        except OSError:
            continue
        errors = [line for line in lines if "ERROR" in line or "Error" in line]
        if errors or lines:
            return (errors or lines)[-1][:300]
    return None


class NeuronBackend(XlaBackend):
    name = "neuron"
    stack = "xla"

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self._compile: Optional[Dict[str, Any]] = None

    def check(self) -> None:
        if importlib.util.find_spec("torch_neuronx") is None:
            pattern = " ".join(venv_globs())
            venvs = sorted(v for p in venv_globs() for v in glob.glob(p))
            where = ("found %s: set the host's Python to %s/bin/python" % (", ".join(venvs), venvs[-1])
                     if venvs else "found none")
            raise BackendUnavailable(
                "backend neuron needs torch-neuronx, which is not installed for %s; looked for Neuron venvs "
                "in %s (%s). Neuron SDK 2.32 and later no longer ship torch-neuronx 2.9 (the XLA stack): on Trn2/Trn3 "
                "use the SDK 2.33 DLAMI's TorchNeuron venv (/opt/aws_neuronx_venv_torch_neuronx_2_14_0), on Inf2/Trn1 "
                "SDK <= 2.31 (torch-neuronx 2.9 with torch-xla 2.9)" % (sys.executable, pattern, where))
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
        if not self.spec.compile_cache_reuse and self.spec.workload == "train":
            # --no-compile-cache: a cache of this process's own, empty, so every graph compiles cold.
            os.environ["NEURON_COMPILE_CACHE_URL"] = os.path.join(
                os.environ.get("NEURONBENCH_RUN_DIR") or os.getcwd(), "neuron-cache-cold")

    def describe(self) -> Dict[str, Any]:
        import torch_neuronx

        # Traced inference runs the saved TorchScript artefact through the Neuron runtime, not on an
        # XLA device: asking torch-xla for one here would start a PJRT client that inference never uses.
        info = super().describe() if self.spec.workload == "train" else Backend.describe(self)
        if self.spec.workload != "train":
            info["device"] = "NeuronCore x%d (%s)" % (
                self.spec.nproc, "optimum-neuron" if self.spec.workload == "generate" else "torch_neuronx.trace")
        info["torch_neuronx"] = getattr(torch_neuronx, "__version__", None)
        info["neuronx_cc"] = installed_version("neuronx-cc")
        info["visible_cores"] = os.environ.get("NEURON_RT_VISIBLE_CORES")
        info["stack"] = self.stack
        info["compiler_args"] = compiler_args(self.spec.neuron_cc_flags)
        info["compiler_flags_via"] = "compiler_args" if self.spec.workload != "train" else "NEURON_CC_FLAGS"
        return info

    def compile_info(self) -> Optional[Dict[str, Any]]:
        return self._compile

    def compile_for_inference(self, model: Any, example: Tuple[Any, ...], workdir: str,
                              tag: str) -> Callable[..., Any]:
        import torch
        import torch_neuronx  # before torch.jit.load: it registers the Neuron ops a saved artefact holds

        args = compiler_args(self.spec.neuron_cc_flags)
        sdk = {"torch_neuronx": getattr(torch_neuronx, "__version__", None),
               "neuronx_cc": installed_version("neuronx-cc")}
        key, fields = trace_cache.cache_key(model, example, args, sdk)
        cached = trace_cache.lookup(key) if self.spec.compile_cache_reuse else None
        path = os.path.join(workdir, "traced-%s.pt" % tag)
        info: Dict[str, Any] = {"how": "torch_neuronx.trace", "key": key, "compiler_args": args,
                                "model_sha256": fields["model_sha256"]}
        if cached is not None:
            # Compile once, load many times: the artefact this host traced before for the same model,
            # shapes, dtype, compiler arguments and SDK.
            info.update(state="loaded", artefact=cached)
            path = cached
        else:
            compile_dir = os.path.join(workdir, "neuron-compile-%s" % tag)
            started = time.time() - 1.0  # a file system's mtime may be a second coarse
            try:
                traced = torch_neuronx.trace(model, example, compiler_workdir=compile_dir,
                                             compiler_args=args or None)
            except Exception as exc:
                raise RuntimeError(self._trace_failure(exc, tag, compile_dir, started)) from exc
            # The seed saves the traced model and loads it back: serving loads a saved artefact, so we
            # time what serving runs.
            torch.jit.save(traced, path)
            shutil.rmtree(compile_dir, ignore_errors=True)  # kept only when the compile failed
            info.update(state="cold", artefact=path,
                        cached_as=trace_cache.store(key, fields, path) if self.spec.compile_cache_reuse else None)
            if not self.spec.compile_cache_reuse:
                info["note"] = "--no-compile-cache: compiled cold and not kept for later runs"
        self._compile = info
        loaded = torch.jit.load(path)
        if self.spec.nproc > 1:
            # One copy per NeuronCore; each request feeds every core one batch (dynamic batching off:
            # input.shape[0] / cores == the traced batch).
            loaded = torch_neuronx.DataParallel(loaded, device_ids=list(range(self.spec.nproc)),
                                                set_dynamic_batching=False)

        def run(*inputs: Any) -> Any:
            with torch.no_grad():
                return loaded(*inputs)

        return run

    @staticmethod
    def _trace_failure(exc: Exception, tag: str, compile_dir: str, started: float) -> str:
        """The sentence of a failed trace, with the compiler's own cause.

        neuronx-cc writes its log (``log-neuron-cc.txt``, a relative name) into the directory it runs in: the
        trace's process's working directory, not ``compiler_workdir``.  The log is copied into the kept
        folder, so that the folder the sentence names holds it (and the next shape's compile cannot
        overwrite it).
        """
        said = compiler_line(compile_dir)
        if said is None:
            said = compiler_line(os.getcwd(), since=started)
            if said is not None:
                try:
                    os.makedirs(compile_dir, exist_ok=True)
                    shutil.copyfile(os.path.join(os.getcwd(), "log-neuron-cc.txt"),
                                    os.path.join(compile_dir, "log-neuron-cc.txt"))
                except OSError:
                    pass  # the sentence already carries the compiler's line
        said = said or (str(exc).splitlines() or [type(exc).__name__])[0]
        return "neuronx-cc could not compile the model (%s): %s; the compiler's files are kept in %s" % (
            tag, said, compile_dir)

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
