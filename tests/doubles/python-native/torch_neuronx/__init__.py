"""Test stand-in for TorchNeuron, the native ``torch_neuronx`` (2.13.3.0.x / 2.14.3.0.x, Neuron SDK 2.33), on
machines without Neuron.  Tests put ``tests/doubles/python-native`` on PYTHONPATH of a Python with a newer
torch (the suite's ``.venv-native``, torch 2.13) so the product's native backend runs end to end.

TorchNeuron's source is not public, so every rule this stand-in keeps names the public page it comes from
(``tests/agent/test_stand_in_citations.py`` checks that each rule below carries one).  Where a page does not
say a detail, the April 2026 pre-release source (research/torchneuron.md [SRC]) is named beside it.
docs/neuron.md says where the stand-in ends (the tensors live on the CPU; the compiler is not run).

Rules kept (one ``- rule:`` a line block, its sources under it):

- rule: the import renames PyTorch's PrivateUse1 device to ``neuron`` and registers ``torch.neuron``
  (device_count, synchronize, memory, dynamo metrics); ``torch.accelerator`` code works unchanged.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/about-pytorch-neuron.html
- rule: ``torch.neuron.is_available()`` is True on a Neuron host with a visible NeuronCore, and
  ``torch.neuron.device_count()`` counts the logical NeuronCores this process sees.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/get-started/quickstart-torch-neuron.html
- rule: a process sees the NeuronCores ``NEURON_RT_VISIBLE_CORES`` names (one index or an inclusive range,
  ``0``, ``2-3``), all of them when it is unset; a process per core is the documented way to run in parallel.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/neuron-runtime/guides/configuration-guide.html
- rule: ``torch.compile(backend="neuron")`` rejects ``dynamic=True`` (symbolic shapes); a new input shape is
  a new graph (a recompile); every compiled graph counts in ``counters["neuron"]["compiled_graphs"]``.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html
- rule: ``get_dynamo_metrics()`` (``torch_neuronx`` and ``torch.neuron``) returns a list of
  ``NeuronCompilationMetrics`` dataclass objects, one per graph (graph_id, graph_name, ...,
  torch_neuronx_compile_us), not dicts; ``reset_dynamo_metrics()`` clears them and ``counters["neuron"]``.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/compile/reference-torch-compile.html
  (its helper API; the fields as in [SRC] torch_neuronx/neuron_dynamo_backend/metrics.py)
- rule: NEFFs are cached in ``TORCH_NEURONX_NEFF_CACHE_DIR`` (default ``/tmp/neff_cache``) as
  ``<key>/<key>.neff``, the key a hash of the graph and the compiler's configuration (``NEURON_CC_FLAGS``);
  the compile lock sits in ``TORCH_NEURONX_NEFF_LOCAL_CACHE_DIR`` (default ``/tmp/local_cache``) as
  ``<key>/locks/compile.lock``; a hit adds no file; ``TORCH_NEURONX_NEFF_DISABLE_CACHE=1`` compiles anew.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html
  (the layout as in [SRC] torch_neuronx/kernels/compiler_subprocess.py ``_nfs_cache_path``)
- rule: compiler flags reach neuronx-cc through ``NEURON_CC_FLAGS``.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html
- rule: a graph that fails to compile raises (``TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION`` defaults to 1),
  never runs on the CPU instead; the error carries neuronx-cc's stderr, and neuronx-cc runs in a
  working directory of its own, where it writes ``log-neuron-cc.txt`` (the ``--logfile`` default).
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/env-vars.html
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/about-neuronx-cc.html
- rule: ops the device cannot run fall back to the host CPU, listed by ``get_fallback_ops()``; the others by
  ``get_executed_ops()``.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/reference/best-practices-pytorch-neuron.html
- rule: ``init_process_group("neuron")`` makes a ``neuron`` process group; a rank whose
  ``NEURON_RT_VISIBLE_CORES`` is unset gets core ``LOCAL_RANK`` ([SRC] distributed/backend.py).
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/torch/guides/torch-distributed.html
- rule: ``torch.autocast("neuron", dtype=torch.bfloat16)`` is the mixed-precision context.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/_sources/torch/index.rst

What is not the real thing (docs/neuron.md's table): **tensors live on the CPU** (a global TorchFunctionMode
turns ``device="neuron"`` into the CPU in every torch call, so bf16 autocast has no neuron kernels and the
math stays fp32); ``torch.accelerator``'s stream and device-index calls, which the real library answers in
C++, are answered in Python (a CPU build of torch has no C++ hooks for the device); "compiling" writes a
stand-in NEFF and runs the graph eagerly; ``max_memory_allocated()`` is the process's peak resident memory.

Test knobs: ``NEURONBENCH_FAKE_NEURON_CORES`` (logical cores of the host, default 2);
``NEURONBENCH_FAKE_NEURON_FALLBACK=aten::sort,aten::topk`` names ops that "fell back to CPU" (``*``: all);
``NEURONBENCH_FAKE_NEURONX_FAIL=TEXT`` makes a compile fail as neuronx-cc does;
``NEURONBENCH_FAKE_NEURON_RUNTIMES=DIR``: the process that opens the runtime (its first compile) leaves
``DIR/<pid>.json`` with its visible cores, as a runtime neuron-monitor lists (tests/doubles/bin/neuron-monitor
reads it).  Every call of note is appended to ``NEURONBENCH_FAKE_NEURONX_LOG`` (one JSON object a line).
"""
import dataclasses
import hashlib
import json
import os
import resource
import sys
import tempfile
import time
import types

import torch
from torch.overrides import TorchFunctionMode

__version__ = "2.13.3.0+testdouble"
_METRICS = []
_EXECUTED = []
_FALLBACK = []
_SYNCS = [0]
_RUNTIME = []


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


def _visible_cores():
    """The logical NeuronCores this process sees: NEURON_RT_VISIBLE_CORES (``0``, ``2-3``, ``0,2``) or all."""
    every = list(range(int(os.environ.get("NEURONBENCH_FAKE_NEURON_CORES", "2"))))
    text = os.environ.get("NEURON_RT_VISIBLE_CORES", "").strip()
    if not text:
        return every
    cores = []
    for part in text.split(","):
        low, _, high = part.strip().partition("-")
        cores.extend(range(int(low), int(high or low) + 1))
    if any(core not in every for core in cores):
        raise RuntimeError(f"NEURON_RT_VISIBLE_CORES={text} names a NeuronCore this host lacks "
                           f"(it has {len(every)})")
    return cores


def _device_count():
    return len(_visible_cores())


def _open_runtime():
    """The runtime opens on first use: the process then holds its visible cores, as neuron-monitor lists."""
    if _RUNTIME:
        return
    _RUNTIME.append(_visible_cores())
    folder = os.environ.get("NEURONBENCH_FAKE_NEURON_RUNTIMES")
    if folder:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{os.getpid()}.json"), "w", encoding="utf-8") as handle:
            json.dump({"pid": os.getpid(), "cores": _RUNTIME[0]}, handle)
    _record(call="runtime", cores=_RUNTIME[0])


@dataclasses.dataclass
class NeuronCompilationMetrics:
    """Per-graph compilation metrics, as the real backend's dataclass (its fields and defaults)."""

    graph_id: str
    graph_name: str = ""
    model_name: str = ""
    has_collectives: bool = False
    graph_node_count: int = 0
    timestamp: str = ""
    torch_neuronx_fx_passes_us: int = 0
    torch_neuronx_lower_us: int = 0
    torch_neuronx_compile_us: int = 0


def get_dynamo_metrics():
    _synchronize()  # the real one syncs so that the compile times are filled in
    return list(_METRICS)


def reset_dynamo_metrics():
    from torch._dynamo.utils import counters

    _METRICS.clear()
    counters["neuron"].clear()


# torch.accelerator's stream and device-index calls: the real library answers them in C++ for the neuron device.
def _current_stream(device=None):
    return torch.Stream("cpu")


def _module():
    mod = types.ModuleType("torch.neuron")
    mod.is_available = lambda: _device_count() > 0
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
    mod.get_dynamo_metrics = get_dynamo_metrics
    mod.reset_dynamo_metrics = reset_dynamo_metrics
    mod.get_amp_supported_dtype = lambda: [torch.bfloat16, torch.float16]
    mod._is_in_bad_fork = lambda: False
    mod.manual_seed = lambda seed: None
    mod.manual_seed_all = lambda seed: None
    mod.current_stream = _current_stream
    return mod


if torch._C._get_privateuse1_backend_name() != "neuron":
    torch.utils.rename_privateuse1_backend("neuron")
    torch._register_device_module("neuron", _module())
    _NeuronOnCpu().__enter__()  # for the whole process, as the real device is
    torch.accelerator.synchronize = _synchronize
    torch.accelerator.current_stream = _current_stream
    torch.accelerator.current_device_index = lambda: 0
    torch.accelerator.set_device_index = lambda device: None


# ----------------------------------------------------------------------------- torch.compile(backend="neuron")
def _op_names(gm):
    names = []
    for node in gm.graph.nodes:
        if node.op in ("call_function", "call_method"):
            target = node.target
            name = getattr(target, "__name__", None) or str(target)
            names.append(f"aten::{name.strip('_')}")
    return names


def _disabled(name):
    return os.environ.get(name, "").lower() in ("true", "1", "yes")


def _fail_as_neuronx_cc(key, failure):
    """neuronx-cc exits 70.  It ran in a temporary working directory of its own ([SRC] sync mode), where its
    log went and which is gone afterwards: only its stderr, inside the raised error, is left."""
    with tempfile.TemporaryDirectory(prefix="neuronxcc-") as workdir, \
            open(os.path.join(workdir, "log-neuron-cc.txt"), "w", encoding="utf-8") as handle:
        handle.write(f"INFO: Compiling graph {key}\nERROR 70: {failure}\n")
    _record(call="compile", key=key, failed=True)
    command = f"neuronx-cc compile --framework StableHLO --target trn2 module.mlir --output module.neff " \
              f"{os.environ.get('NEURON_CC_FLAGS', '')}".strip()
    raise RuntimeError(f"NEFF compilation failed with return code 70\nCommand: {command}\n"
                       f"Error: [ERROR] [NCC_EVRF009] {failure}\n")


def _neuron_backend(gm, example_inputs, **_options):
    from torch._dynamo.utils import counters

    shapes = []
    for value in example_inputs:
        shape = getattr(value, "shape", ())
        if any(isinstance(n, torch.SymInt) for n in shape):
            raise RuntimeError("torch.compile(backend='neuron') does not support dynamic shapes (dynamic=True): "
                               "Neuron graphs are static")
        shapes.append([int(n) for n in shape])
    _open_runtime()
    flags = os.environ.get("NEURON_CC_FLAGS", "")
    key = hashlib.sha256(f"{gm.code}|{shapes}|{flags}".encode()).hexdigest()
    started = time.perf_counter()
    failure = os.environ.get("NEURONBENCH_FAKE_NEURONX_FAIL")
    if failure:
        _fail_as_neuronx_cc(key, failure)
    cache = os.environ.get("TORCH_NEURONX_NEFF_CACHE_DIR", "/tmp/neff_cache")
    neff = os.path.join(cache, key, f"{key}.neff")
    caching = not _disabled("TORCH_NEURONX_NEFF_DISABLE_CACHE")
    hit = caching and os.path.exists(neff)
    if caching and not hit:
        locks = os.path.join(os.environ.get("TORCH_NEURONX_NEFF_LOCAL_CACHE_DIR", "/tmp/local_cache"), key, "locks")
        os.makedirs(locks, exist_ok=True)
        open(os.path.join(locks, "compile.lock"), "a").close()
        os.makedirs(os.path.dirname(neff), exist_ok=True)
        staging = neff + f".{os.getpid()}.tmp"  # written aside, then renamed: a reader never sees half a NEFF
        with open(staging, "w", encoding="utf-8") as handle:
            handle.write(f"stand-in NEFF of graph {key} for {shapes}, NEURON_CC_FLAGS={flags!r}\n")
        os.replace(staging, neff)
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
    _METRICS.append(NeuronCompilationMetrics(
        graph_id=key, graph_name=f"model_{len(_METRICS)}_forward_0", model_name="model",
        graph_node_count=len(ops), timestamp=str(time.time()), torch_neuronx_fx_passes_us=5,
        torch_neuronx_lower_us=5,
        torch_neuronx_compile_us=int((time.perf_counter() - started) * 1e6) + (1 if hit else 250000)))
    _record(call="compile", key=key, shapes=shapes, neuron_cc_flags=flags, cache_hit=hit, ops=len(ops),
            visible_cores=os.environ.get("NEURON_RT_VISIBLE_CORES"))
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

    # Unpinned ranks get their own core: NEURON_RT_VISIBLE_CORES from LOCAL_RANK ([SRC] distributed/backend.py).
    os.environ.setdefault("NEURON_RT_VISIBLE_CORES", os.environ.get("LOCAL_RANK", str(rank)))
    _record(call="process_group", rank=rank, world=world_size, visible_cores=os.environ["NEURON_RT_VISIBLE_CORES"])
    return dist.ProcessGroupGloo(store, rank, world_size, timeout)


def _register_process_group():
    import torch.distributed as dist

    if "neuron" not in dist.Backend.backend_list:
        dist.Backend.register_backend("neuron", _create_process_group, devices=["cpu", "neuron"])


_register_process_group()
_record(call="import", version=__version__, python=sys.version.split()[0], torch=torch.__version__)
