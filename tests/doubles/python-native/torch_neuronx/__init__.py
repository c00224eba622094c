"""Test stand-in for TorchNeuron, the native ``torch_neuronx`` (2.13.3.0.x / 2.14.3.0.x, Neuron SDK 2.33), on
machines without Neuron.  Tests put ``tests/doubles/python-native`` on PYTHONPATH of a Python with a newer
torch (the suite's ``.venv-native``, torch 2.13) so the product's native backend runs end to end.

What the real library does on import, and what this one does (docs/neuron.md says where it ends):

- renames PyTorch's PrivateUse1 device to ``neuron`` and registers ``torch.neuron``: the same here, so
  ``torch.device("neuron")``, ``torch.autocast("neuron", dtype=torch.bfloat16)`` and ``torch.neuron.*``
  are what the agent calls.  **Underneath, tensors live on the CPU**: a global TorchFunctionMode turns
  ``device="neuron"`` into the CPU in every torch call, so ``tensor.device`` reads ``cpu`` and bf16
  autocast has no neuron kernels to cast (the math stays fp32).  ``torch.neuron.is_available()`` says
  False (True would make TorchDynamo ask the C++ accelerator API, which a CPU build of torch lacks) and
  ``torch.accelerator.synchronize`` is routed to ``torch.neuron.synchronize``.
- registers a ``neuron`` torch.compile backend: keeps the documented rules: ``dynamic=True`` (symbolic
  shapes) is rejected, a new input shape is a new graph (a recompile), every compiled graph counts in
  ``torch._dynamo.utils.counters["neuron"]["compiled_graphs"]`` and has a ``get_dynamo_metrics()`` entry
  (``torch_neuronx_compile_us``...).  "Compiling" writes a NEFF file into ``TORCH_NEURONX_NEFF_CACHE_DIR``
  keyed by the graph, its input shapes and ``NEURON_CC_FLAGS`` (the native path's compiler flags); a
  graph whose NEFF is there is served from the cache (no new file); ``TORCH_NEURONX_NEFF_DISABLE_CACHE=1``
  compiles every graph anew.  The graph then runs eagerly on the CPU.
- ``get_fallback_ops()`` / ``get_executed_ops()``: the ops of the compiled graphs, as on the device;
  ``NEURONBENCH_FAKE_NEURON_FALLBACK=aten::sort,aten::topk`` names ops that "fell back to CPU";
  ``NEURONBENCH_FAKE_NEURON_FALLBACK=*``: every op fell back and nothing ran on the device.
- ``NEURONBENCH_FAKE_NEURONX_FAIL=TEXT``: a compile fails as neuronx-cc does (its log line under
  ``TORCH_NEURONX_DEBUG_DIR``, then an error), with ``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION=1`` honoured:
  a failed graph raises, it never runs on the CPU instead.
- ``init_process_group("neuron")``: a ``neuron`` process-group backend (gloo underneath, CPU tensors).
- memory: ``max_memory_allocated()`` is this process's peak resident memory (the CPU's, not HBM).

Every call of note is appended to ``NEURONBENCH_FAKE_NEURONX_LOG`` (one JSON object a line).
"""
import hashlib
import json
import os
import resource
import sys
import time
import types

import torch
from torch.overrides import TorchFunctionMode

__version__ = "2.13.3.0+testdouble"
_METRICS = {}
_EXECUTED = []
_FALLBACK = []
_SYNCS = [0]


def _record(**event):
    path = os.environ.get("NEURONBENCH_FAKE_NEURONX_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(dict(event, pid=os.getpid())) + "\n")


# ----------------------------------------------------------------------------- the neuron device
def _on_cpu(value):
    if isinstance(value, torch.device) and value.type == "neuron":
        return torch.device("cpu")
    if isinstance(value, str) and value.split(":")[0] == "neuron":
        return "cpu"
    return value


class _NeuronOnCpu(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = _on_cpu(kwargs["device"])
        return func(*(_on_cpu(a) for a in args), **kwargs)


def _peak_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _synchronize(device=None):
    _SYNCS[0] += 1


def _device_count():
    return int(os.environ.get("NEURONBENCH_FAKE_NEURON_CORES", "2"))


def _get_dynamo_metrics():
    return {name: dict(entry) for name, entry in _METRICS.items()}


def _module():
    mod = types.ModuleType("torch.neuron")
    mod.is_available = lambda: False  # see the module's docstring
    mod.device_count = _device_count
    mod.current_device = lambda: 0
    mod.set_device = lambda index: None
    mod.synchronize = _synchronize
    mod.get_device_name = lambda index=0: f"neuron:{index}"
    mod.memory_allocated = lambda device=None: _peak_bytes()
    mod.max_memory_allocated = lambda device=None: _peak_bytes()
    mod.memory_reserved = mod.memory_allocated
    mod.max_memory_reserved = mod.max_memory_allocated
    mod.reset_peak_memory_stats = lambda device=None: None
    mod.memory_stats = lambda device=None: {"allocated_bytes.all.peak": _peak_bytes()}
    mod.empty_cache = lambda: None
    mod.get_dynamo_metrics = _get_dynamo_metrics
    mod.reset_dynamo_metrics = _METRICS.clear
    mod.get_amp_supported_dtype = lambda: [torch.bfloat16, torch.float16]
    mod._is_in_bad_fork = lambda: False
    mod.manual_seed = lambda seed: None
    mod.manual_seed_all = lambda seed: None
    return mod


if torch._C._get_privateuse1_backend_name() != "neuron":
    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", _module())
    _NeuronOnCpu().__enter__()  # for the whole process, as the real device is
    torch.accelerator.synchronize = _synchronize


# ----------------------------------------------------------------------------- torch.compile(backend="neuron")
def _op_names(gm):
    names = []
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            target = node.target
            name = getattr(target, "__name__", None) or str(target)
            names.append(f"aten::{name.strip('_')}")
    return names


def _neuron_backend(gm, example_inputs, **_options):
    from torch._dynamo.utils import counters

    shapes = []
    for value in example_inputs:
        shape = getattr(value, "shape", ())
        if any(isinstance(n, torch.SymInt) for n in shape):
            raise RuntimeError("torch.compile(backend='neuron') does not support dynamic shapes (dynamic=True): "
                               "Neuron graphs are static")
        shapes.append([int(n) for n in shape])
    flags = os.environ.get("NEURON_CC_FLAGS", "")
    key = hashlib.sha256(f"{gm.code}|{shapes}|{flags}".encode()).hexdigest()[:24]
    started = time.perf_counter()
    failure = os.environ.get("NEURONBENCH_FAKE_NEURONX_FAIL")
    if failure:
        debug = os.path.join(os.environ.get("TORCH_NEURONX_DEBUG_DIR", "/tmp/neuron_backend"), key)
        os.makedirs(debug, exist_ok=True)
        with open(os.path.join(debug, "log-neuron-cc.txt"), "w", encoding="utf-8") as handle:
            handle.write(f"INFO: Compiling graph {key}\nERROR 70: {failure}\n")
        _record(call="compile", key=key, failed=True, debug_dir=debug)
        raise RuntimeError(f"neuronx-cc failed with 70 compiling graph {key} (see {debug})")
    cache = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR", "/tmp/neff_cache")
    neff = os.path.join(cache, key, "model.neff")
    hit = os.environ.get("TORCH_NEURONX_NEFF_DISABLE_CACHE") != "1" and os.path.exists(neff)
    if not hit:
        os.makedirs(os.path.dirname(neff), exist_ok=True)
        with open(neff, "w", encoding="utf-8") as handle:
            handle.write(f"stand-in NEFF of graph {key} for {shapes}, NEURON_CC_FLAGS={flags!r}\n")
    counters["neuron"]["compiled_graphs"] += 1
    ops = _op_names(gm)
    asked = os.environ.get("NEURONBENCH_FAKE_NEURON_FALLBACK", "")
    fell = ops if asked == "*" else [op for op in ops if op in asked.split(",")]
    for op in fell:
        if op not in _FALLBACK:
            _FALLBACK.append(op)
    for op in ops:
        if op not in fell and op not in _EXECUTED:
            _EXECUTED.append(op)
    _METRICS[f"graph_{len(_METRICS)}"] = {
        "torch_neuronx_fx_passes_us": 5, "torch_neuronx_lower_us": 5,
        "torch_neuronx_compile_us": int((time.perf_counter() - started) * 1e6) + (1 if hit else 250000),
        "neff_cache_hit": hit}
    _record(call="compile", key=key, shapes=shapes, neuron_cc_flags=flags, cache_hit=hit, ops=len(ops))
    return gm.forward


def get_fallback_ops():
    return list(_FALLBACK)


def get_executed_ops():
    return list(_EXECUTED)


def _autoload():
    """The torch.backends entry point the real package declares (PyTorch autoloads it on import torch)."""


torch._dynamo.register_backend(_neuron_backend, name="neuron")


# ----------------------------------------------------------------------------- the neuron process group
def _create_process_group(store, rank, world_size, timeout):
    import torch.distributed as dist

    _record(call="process_group", rank=rank, world=world_size)
    return dist.ProcessGroupGloo(store, rank, world_size, timeout)


def _register_process_group():
    import torch.distributed as dist

    if "neuron" not in dist.Backend.backend_list:
        dist.Backend.register_backend("neuron", _create_process_group, devices=["cpu", "neuron"])


_register_process_group()
_record(call="import", version=__version__, python=sys.version.split()[0], torch=torch.__version__)
