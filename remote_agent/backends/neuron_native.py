"""The neuron backend's native stack: TorchNeuron (torch-neuronx 2.13/2.14, Neuron SDK 2.33) on Trn2/Trn3.

PyTorch's own ``neuron`` device (research/torchneuron.md): eager per-op execution or
``torch.compile(backend="neuron", fullgraph=True)`` with static shapes (one compile per batch size and
length; ``dynamic=True`` is rejected), bf16 through ``torch.autocast("neuron", dtype=torch.bfloat16)``,
``torch.accelerator.synchronize()`` closing every timed region, ``init_process_group("neuron")`` with
one process per logical NeuronCore.  Compiler flags go through ``NEURON_CC_FLAGS``.

Compile time is kept apart: from ``torch.neuron.get_dynamo_metrics()`` where the library reports it (a list
of ``NeuronCompilationMetrics`` objects; older builds gave dicts), else from the first call's gap over a steady
call, and the Result says which.  Cold or warm: NEFFs land in ``TORCH_NEURONX_NEFF_CACHE_DIR`` (as
``<key>/<key>.neff``), pinned per host (not per run) so the second run loads them; a compile that added no
``.neff`` there was served from the cache.  Inference over ``--nproc N`` logical cores is data parallel: one
process per core (torchrun), each pinned with ``NEURON_RT_VISIBLE_CORES``, the requests of all merged.
Ops that fell back to the host CPU (``torch_neuronx.get_fallback_ops()``) are named in the Result and warned
about; a run where nothing ran on the device is refused.  Fallback execution of a graph that failed to
compile stays off.
"""
from __future__ import annotations

import importlib.util
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from remote_agent.backends.base import Backend, BackendUnavailable
from remote_agent.neuron_stack import classify
from remote_agent.probe.neuron import device_files, device_glob
from remote_agent.probe.packages import installed_version
from remote_agent.rundir import agent_home
from remote_agent.workloads.problems import SpecProblem

NEFF_CACHE_ENV = "TORCH_NEURONX_NEFF_CACHE_DIR"


def neff_cache_dir(spec: Any) -> str:
    """Per host, not per run: the second run of the same graphs is warm.  ``--compile-cache DIR`` moves it."""
    return spec.compile_cache or os.path.join(agent_home(), "neff-cache")


def _count_neffs(path: str) -> int:
    """Compiled graphs in the NEFF cache: its ``.neff`` files (not a lock, not a NEFF still being written)."""
    total = 0
    for _root, _dirs, files in os.walk(path):
        total += sum(1 for name in files if name.endswith(".neff"))
    return total


def parse_core_list(text: str) -> List[int]:
    """``NEURON_RT_VISIBLE_CORES``'s syntax: one index or an inclusive range, comma-separated (``0``, ``4-7``)."""
    cores: List[int] = []
    for part in (text or "").split(","):
        low, _, high = part.strip().partition("-")
        if low.isdigit() and (not high or high.isdigit()):
            cores.extend(range(int(low), int(high or low) + 1))
    return cores


def rank_core(visible: Optional[str], local_rank: int) -> str:
    """The core a data-parallel rank is pinned to: the ``local_rank``-th of the cores the run may use
    (``NEURON_RT_VISIBLE_CORES`` as the user set it, else every core from 0)."""
    cores = parse_core_list(visible or "")
    return str(cores[local_rank] if local_rank < len(cores) else local_rank)


class NeuronNativeBackend(Backend):
    name = "neuron"
    stack = "native"
    dist_backend = "neuron"

    def __init__(self, spec: Any) -> None:
        super().__init__(spec)
        self._compile: Optional[Dict[str, Any]] = None
        self._fallback: List[str] = []
        self._executed: Optional[List[str]] = None
        self._neffs_before = 0
        self._compile_started = 0.0

    # ----------------------------------------------------------------- lifecycle
    def check(self) -> None:
        if importlib.util.find_spec("torch_neuronx") is None:
            raise BackendUnavailable(
                "backend neuron (native) needs torch-neuronx 2.13 or 2.14 (TorchNeuron), which is not installed "
                "for %s: use the Neuron SDK 2.33 DLAMI's /opt/aws_neuronx_venv_torch_neuronx_2_14_0" % sys.executable)
        stack, problem = classify(installed_version("torch"), installed_version("torch-neuronx"),
                                  installed_version("torch-xla"))
        if stack != "native":
            raise BackendUnavailable("backend neuron (native) found torch-neuronx %s, the XLA stack: run with "
                                     "--neuron-stack xla" % installed_version("torch-neuronx"))
        if problem:
            raise BackendUnavailable(problem)
        if not device_files():
            raise BackendUnavailable(
                "backend neuron found TorchNeuron but no Neuron device (%s is missing): run on a Trn2 or Trn3 "
                "instance with the Neuron driver loaded" % device_glob())
        if self.spec.dynamic_shapes:
            raise SpecProblem("--dynamic-shapes: torch.compile(backend=\"neuron\") rejects dynamic=True (Neuron "
                              "graphs are static); give the batch sizes and lengths to sweep, one compile each")

    def setup_env(self) -> None:
        # The native stack runs without torch-xla: a PJRT_DEVICE left in the environment is the XLA stack's.
        os.environ.pop("PJRT_DEVICE", None)
        os.environ.setdefault(NEFF_CACHE_ENV, neff_cache_dir(self.spec))
        if not self.spec.compile_cache_reuse:
            os.environ["TORCH_NEURONX_NEFF_DISABLE_CACHE"] = "1"  # --no-compile-cache: every graph cold
        # A graph that fails to compile raises (the SDK 2.33 default, pinned): never a silent CPU run.
        os.environ["TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION"] = "1"
        os.environ.setdefault("TORCH_NEURONX_DEBUG_DIR", os.path.join(os.getcwd(), "neuron-compile"))
        if self.spec.workload == "infer" and int(os.environ.get("LOCAL_WORLD_SIZE", "1")) > 1:
            # Data-parallel inference: one process per logical core, each pinned to its own before the runtime
            # starts (NeuronCores are exclusive per process; no process group sets it on this path).
            os.environ["NEURON_RT_VISIBLE_CORES"] = rank_core(os.environ.get("NEURON_RT_VISIBLE_CORES"),
                                                              int(os.environ.get("LOCAL_RANK", "0")))
        if self.spec.neuron_cc_flags:
            os.environ["NEURON_CC_FLAGS"] = self.spec.neuron_cc_flags
        if self.spec.stochastic_rounding:
            os.environ["NEURON_RT_STOCHASTIC_ROUNDING_EN"] = "1"

    def _library(self) -> Any:
        import torch_neuronx  # registers the neuron device, its torch.compile backend and process group

        return torch_neuronx

    def describe(self) -> Dict[str, Any]:
        import torch

        neuronx = self._library()
        info = super().describe()
        info.update({
            "stack": self.stack,
            "device": "NeuronCore (neuron device, torch.%s)" % (
                "compile backend=neuron" if self.spec.neuron_mode == "compile" else "eager"),
            "mode": self.spec.neuron_mode,
            "torch_neuronx": getattr(neuronx, "__version__", None) or installed_version("torch-neuronx"),
            "neuronx_cc": installed_version("neuronx-cc"),
            "logical_cores": _call(torch.neuron, "device_count"),
            "visible_cores": os.environ.get("NEURON_RT_VISIBLE_CORES"),
            "neff_cache": os.environ.get(NEFF_CACHE_ENV),
            "compiler_flags_via": "NEURON_CC_FLAGS",
            "compiler_args": (os.environ.get("NEURON_CC_FLAGS") or "").split(),
            "fallback_ops": self.fallback_ops(),
            "device_mem_peak_bytes": _call(torch.neuron, "max_memory_allocated"),
        })
        return info

    def device(self, local_rank: int) -> Any:
        import torch

        self._library()
        # One process per logical core: NEURON_RT_VISIBLE_CORES (set by torchrun's worker env or by the
        # neuron process group from LOCAL_RANK) leaves this process its own core as the neuron device.
        return torch.device("neuron")

    def init_process_group(self) -> None:
        import torch.distributed as dist

        self._library()
        dist.init_process_group("neuron", init_method="env://")

    def synchronize(self) -> None:
        import torch

        torch.accelerator.synchronize()

    def autocast(self) -> Any:
        import contextlib

        import torch

        if self.spec.precision != "bf16":
            return contextlib.nullcontext()
        return torch.autocast("neuron", dtype=torch.bfloat16)

    # ------------------------------------------------------------------ training
    def wrap_for_training(self, model: Any, local_rank: int, world_size: int) -> Any:
        import torch

        self._start_compile_watch()
        if self.spec.neuron_mode == "compile":
            # The model is compiled, then wrapped: DDP's own forward (its logger, its hooks) is not one graph,
            # so torch.compile(DDP(model), fullgraph=True) breaks; DDP(compiled) all-reduces around it.
            model = torch.compile(model, backend="neuron", fullgraph=True, dynamic=False)
        if world_size > 1:
            from torch.nn.parallel import DistributedDataParallel

            model = DistributedDataParallel(model)
        return model

    def finish_step(self, loss: Any) -> float:
        self.synchronize()
        return float(loss.item())

    def compile_stats(self) -> Optional[Dict[str, float]]:
        import torch

        graphs = _compiled_graphs()
        metrics = _dynamo_metrics(torch)
        return {"count": graphs, "seconds": _compile_seconds(metrics) if metrics else 0.0}

    def compile_info(self) -> Optional[Dict[str, Any]]:
        if self._compile is None and self.spec.workload == "train":
            self._compile = self._compile_block(None)
        return self._compile

    # ----------------------------------------------------------------- generation
    def generator(self, model: Any, shape: Any, pad_token_id: int, workdir: str, name: str) -> Any:
        from remote_agent.backends.generation import NativeNeuronGenerator

        return NativeNeuronGenerator(self, model, self.device(0), shape, pad_token_id)

    # ----------------------------------------------------------------- inference
    def compile_for_inference(self, model: Any, example: Tuple[Any, ...], workdir: str,
                              tag: str) -> Callable[..., Any]:
        import torch

        device = self.device(0)
        model = model.to(device)
        self._start_compile_watch()
        compiled = (torch.compile(model, backend="neuron", fullgraph=True, dynamic=False)
                    if self.spec.neuron_mode == "compile" else model)

        def run(*inputs: Any) -> Any:
            with torch.no_grad(), self.autocast():
                outs = compiled(*(x.to(device) for x in inputs))
                self.synchronize()  # close the timed region on the device, not on the launch
                return tuple(out.cpu() for out in outs)

        # Compile (or, eager, the per-op compiles) on the first call for this shape; then one steady call:
        # where the library reports no compile time, the first call's gap over it is the compile.
        t0 = time.perf_counter()
        try:
            run(*example)
        except Exception as exc:
            raise self._compile_failure(exc, tag) from exc
        first = time.perf_counter() - t0
        t1 = time.perf_counter()
        run(*example)
        steady = time.perf_counter() - t1
        self._compile = self._compile_block(max(0.0, first - steady))
        self._refuse_if_nothing_ran()
        return run

    # ----------------------------------------------------------------- compile bookkeeping
    def _start_compile_watch(self) -> None:
        import torch

        _call(torch.neuron, "reset_dynamo_metrics")
        _call(torch.neuron, "reset_peak_memory_stats")
        cache = os.environ.get(NEFF_CACHE_ENV) or ""
        self._neffs_before = _count_neffs(cache) if cache else 0

    def _compile_block(self, first_call_gap: Optional[float]) -> Dict[str, Any]:
        import torch

        metrics = _dynamo_metrics(torch)
        cache = os.environ.get(NEFF_CACHE_ENV) or ""
        new_neffs = (_count_neffs(cache) - self._neffs_before) if cache else None
        block: Dict[str, Any] = {"how": "torch.compile(backend=neuron)" if self.spec.neuron_mode == "compile"
                                 else "eager (per-op compiles)", "graphs": _compiled_graphs(),
                                 "neff_cache": cache or None, "new_neffs": new_neffs}
        if metrics:
            block["seconds_backend"] = _compile_seconds(metrics)
            block["measured_by"] = "torch.neuron.get_dynamo_metrics"
        elif first_call_gap is not None:
            block["seconds_backend"] = first_call_gap
            block["measured_by"] = "first-call gap (the first call's time over a steady call's)"
        else:
            block["measured_by"] = "compiled steps' time (no compile metrics from the library)"
        if not self.spec.compile_cache_reuse:
            block["state"] = "cold"
        elif new_neffs is None:
            block["state"] = None
        else:
            block["state"] = "cold" if new_neffs > 0 else "warm"
        self.fallback_ops()
        block["fallback_ops"] = list(self._fallback)
        return block

    def _compile_failure(self, exc: Exception, tag: str) -> Exception:
        """The compiler's own words: its log where it left one under TORCH_NEURONX_DEBUG_DIR (the folder is named),
        else its stderr, which TorchNeuron puts in the error (neuronx-cc ran in a temporary folder, now gone)."""
        from remote_agent.backends.neuron import compiler_line

        debug = os.environ.get("TORCH_NEURONX_DEBUG_DIR") or ""
        logs = sorted((os.path.join(root, name) for root, _dirs, files in os.walk(debug) for name in files
                       if name.startswith("log-neuron-cc")), key=os.path.getmtime) if debug else []
        if logs:
            folder = os.path.dirname(logs[-1])
            said = compiler_line(folder) or str(exc).splitlines()[0]
            return RuntimeError("neuronx-cc could not compile the model (%s): %s; the compiler's files are kept in "
                                "%s" % (tag, said, folder))
        said = compiler_error_line(str(exc))
        if said is None:
            return exc
        return RuntimeError("neuronx-cc could not compile the model (%s): %s" % (tag, said))

    def fallback_ops(self) -> List[str]:
        """The ops that ran on the host CPU instead of the NeuronCore (torch_neuronx.get_fallback_ops())."""
        neuronx = self._library()
        got = _call(neuronx, "get_fallback_ops")
        if got:
            for op in got:
                name = str(op)
                if name not in self._fallback:
                    self._fallback.append(name)
        executed = _call(neuronx, "get_executed_ops")
        if executed is not None:
            self._executed = [str(op) for op in executed]
        return list(self._fallback)

    def _refuse_if_nothing_ran(self) -> None:
        if self._fallback and self._executed is not None and not self._executed:
            raise SpecProblem("every op of the model fell back to the host CPU (%s): nothing ran on the "
                              "NeuronCore, so there is no Trainium figure to report"
                              % ", ".join(self._fallback[:8]))

    def run_warnings(self) -> List[str]:
        """Sentences the Result carries in every view."""
        if not self._fallback:
            return []
        return ["%d op(s) fell back to the host CPU on the neuron device (%s): these figures are partly the "
                "CPU's, not the NeuronCore's alone" % (len(self._fallback), ", ".join(self._fallback[:8]))]


def _call(owner: Any, name: str, *args: Any) -> Any:
    fn = getattr(owner, name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception:  # a metric the library cannot give is missing, never a failed run
        return None


def _dynamo_metrics(torch: Any) -> List[Any]:
    """One entry per compiled graph: ``NeuronCompilationMetrics`` objects (TorchNeuron 2.13/2.14), or dicts
    (a list or a mapping of them, as earlier builds gave)."""
    got = _call(torch.neuron, "get_dynamo_metrics")
    if got is None:
        got = _call(sys.modules.get("torch_neuronx"), "get_dynamo_metrics")
    if isinstance(got, dict):
        got = list(got.values())
    return [m for m in got or [] if _compile_us(m) is not None]


def _compile_us(entry: Any) -> Optional[float]:
    value = entry.get("torch_neuronx_compile_us") if isinstance(entry, dict) else \
        getattr(entry, "torch_neuronx_compile_us", None)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _compile_seconds(metrics: List[Any]) -> float:
    return sum(_compile_us(m) or 0.0 for m in metrics) / 1e6


def compiler_error_line(text: str) -> Optional[str]:
    """neuronx-cc's own error line inside an error's text (its stderr, after ``Error:``), or None."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line for line in lines if "ERROR" in line or line.startswith("Error:")]
    if not said:
        return None
    line = said[-1]
    return (line[len("Error:"):].strip() if line.startswith("Error:") else line)[:300]


def _compiled_graphs() -> int:
    try:
        from torch._dynamo.utils import counters

        return int(counters["neuron"]["compiled_graphs"])
    except Exception:
        return 0
