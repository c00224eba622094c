"""Test stand-in for the XLA-era ``torch_neuronx`` (torch-neuronx 2.9.0.2.x, Neuron SDK <= 2.31) on machines
without Neuron.

It lives under tests/ only: the tests put ``tests/doubles/python`` on PYTHONPATH (with a stand-in
``/dev/neuron0`` through NEURONBENCH_NEURON_DEVICE_GLOB) so that the product's real neuron backend
code runs end to end.  It keeps the documented rules of the real library (DESIGN.md §11: a double
that accepts anything hides defects).  torch-neuronx's source is not public, so each rule names the public
page it comes from (``tests/agent/test_stand_in_citations.py`` checks that every rule carries one); an
old unofficial copy of ``xla_impl/trace.py`` (research/torchneuron.md [TRPY]) is named where a page is silent.

Rules kept (one ``- rule:`` a block, its sources under it):

- rule: ``trace(func, example_inputs, *_, input_output_aliases={}, compiler_workdir=None, compiler_args=None,
  partitioner_config=None, inline_weights_to_neff=True, cpu_backend=False)``: the compiler gets
  ``compiler_args`` (and only those: ``NEURON_CC_FLAGS`` is the XLA training path's channel, not trace's).
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/api-reference-guide/inference/api-torch-neuronx-trace.html
- rule: a traced graph is static: an input of another shape than the example's is refused, even after
  ``torch.jit.save``/``load``.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/api-reference-guide/inference/api-torch-neuronx-trace.html
- rule: ``compiler_workdir`` receives the compiler's intermediary outputs (``command.txt``: the command line);
  neuronx-cc itself runs in the process's working directory and writes its log there (``--logfile``'s
  default ``log-neuron-cc.txt`` is a relative name); a failed compile raises "neuronx-cc failed with N".
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/api-reference-guide/inference/api-torch-neuronx-trace.html
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/compiler/about-neuronx-cc.html
  (the subprocess without a cwd, and the error's words, as in [TRPY] ``hlo_compile``)
- rule: Neuron's persistent compile cache does not apply to ``trace``: each call compiles.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-features/neuron-caching.html
- rule: ``DataParallel(model, device_ids=None, dim=0, set_dynamic_batching=True)``: one copy of the module
  per NeuronCore, each input split along ``dim``; with dynamic batching off,
  ``input.shape[dim] / len(device_ids) == compilation_input.shape[dim]`` or it raises; with it on, the batch is
  cut into compiled-batch pieces spread over the cores; outputs are joined along ``dim``.
  source: https://awsdocs-neuron.readthedocs-hosted.com/en/latest/frameworks/torch/torch-neuronx/api-reference-guide/inference/api-torch-neuronx-data-parallel.html

Where it ends: the "compiled" graph is a TorchScript trace that runs on the CPU, its graph starting with one
``nb_neuron_standin::static_input`` op per input that refuses any other shape (the op survives
``torch.jit.save``/``load`` in a process that imported this module, as the real artefact's Neuron op does);
``compiler_args`` do not change the math; DataParallel's copies are the same CPU module (dim 0 only).
``NEURONBENCH_FAKE_NEURONX_FAIL=TEXT`` makes the compile fail as neuronx-cc does: the error line in
``./log-neuron-cc.txt`` (the working directory) and a RuntimeError.  Every call is appended to the file named
by ``NEURONBENCH_FAKE_NEURONX_LOG`` (if set), one JSON object a line, so a test can check what the backend
asked of torch_neuronx.  ``NEURONBENCH_FAKE_NEURON_RUNTIMES=DIR``: the process that opens the runtime (its first
compiled call, or a DataParallel over cores) leaves ``DIR/<pid>.json`` with the cores it holds, as a runtime
neuron-monitor lists (tests/doubles/bin/neuron-monitor reads it).
"""
import json
import os

import torch

__version__ = "2.9.0.2.11.0+testdouble"

def _registered():
    try:
        torch.ops.nb_neuron_standin.static_input  # noqa: B018 (imported twice in one process: keep the first)
        return True
    except (AttributeError, RuntimeError):
        return False


_LIB = None if _registered() else torch.library.Library("nb_neuron_standin", "DEF")


_RUNTIME = []


def _open_runtime(cores):
    """The process holds ``cores`` from its first execution on (a DataParallel names them all)."""
    if _RUNTIME and set(cores) <= set(_RUNTIME[0]):
        return
    _RUNTIME[:] = [sorted(set(cores) | set(_RUNTIME[0] if _RUNTIME else []))]
    folder = os.environ.get("NEURONBENCH_FAKE_NEURON_RUNTIMES")
    if folder:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"{os.getpid()}.json"), "w", encoding="utf-8") as handle:
            json.dump({"pid": os.getpid(), "cores": _RUNTIME[0]}, handle)


def _visible_cores():
    text = os.environ.get("NEURON_RT_VISIBLE_CORES", "").strip()
    if not text:
        return [0]
    low, _, high = text.split(",")[0].partition("-")
    return list(range(int(low), int(high or low) + 1))


def _static_input(x, shape, index):
    if not _RUNTIME:
        _open_runtime(_visible_cores())
    if list(x.shape) != list(shape):
        raise RuntimeError(f"input {index} has shape {list(x.shape)} but the Neuron graph was compiled for "
                           f"{list(shape)}: a compiled graph is static, trace again for this shape")
    return x


if _LIB is not None:
    _LIB.define("static_input(Tensor(a) x, int[] shape, int index) -> Tensor(a)")
    _LIB.impl("static_input", _static_input, "CompositeExplicitAutograd")


def _record(**event):
    path = os.environ.get("NEURONBENCH_FAKE_NEURONX_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")


def _as_tuple(inputs):
    return tuple(inputs) if isinstance(inputs, (tuple, list)) else (inputs,)


class _Static(torch.nn.Module):
    """The compiled graph's input signature: each input must have the traced shape."""

    def __init__(self, inner, shapes):
        super().__init__()
        self.inner = inner
        self.shapes = [list(s) for s in shapes]
        # Saved with the artefact: DataParallel reads the compiled batch from it, as the real one reads
        # it from the compiled graph.
        self.register_buffer("compiled_batch", torch.tensor([shapes[0][0] if shapes and shapes[0] else 1]))

    def forward(self, *inputs):
        checked = [torch.ops.nb_neuron_standin.static_input(x, shape, i)
                   for i, (x, shape) in enumerate(zip(inputs, self.shapes, strict=False))]
        return self.inner(*checked)


def trace(func, example_inputs, *_, input_output_aliases={}, compiler_workdir=None, compiler_args=None,  # noqa: B006
          partitioner_config=None, inline_weights_to_neff=True, cpu_backend=False):
    example = _as_tuple(example_inputs)
    args = compiler_args.split() if isinstance(compiler_args, str) else [str(a) for a in compiler_args or []]
    _record(call="trace", batch=int(example[0].shape[0]), pid=os.getpid(), inputs=len(example),
            compiler_args=args, compiler_workdir=compiler_workdir,
            neuron_cc_flags_env=os.environ.get("NEURON_CC_FLAGS"))
    if compiler_workdir:
        os.makedirs(compiler_workdir, exist_ok=True)
        with open(os.path.join(compiler_workdir, "command.txt"), "w", encoding="utf-8") as handle:
            handle.write(" ".join(["neuronx-cc", "compile", "--framework", "XLA", "model.hlo"] + args) + "\n")
    failure = os.environ.get("NEURONBENCH_FAKE_NEURONX_FAIL")
    if failure:
        # neuronx-cc runs without a cwd of its own: its log lands in this process's working directory.
        with open("log-neuron-cc.txt", "w", encoding="utf-8") as handle:
            handle.write(f"INFO: Compiling\nERROR 70: {failure}\n")
        raise RuntimeError("neuronx-cc failed with 70")
    with torch.no_grad():
        return torch.jit.trace(_Static(func, [tuple(x.shape) for x in example]), example, check_trace=False)


class DataParallel:
    """One model copy per NeuronCore in ``device_ids``; each call splits its input over them."""

    def __init__(self, model, device_ids=None, dim=0, set_dynamic_batching=True):
        if dim != 0:
            raise ValueError("this stand-in splits along dim 0 only")
        self.module = module = model
        self.device_ids = list(device_ids) if device_ids is not None else [0]
        self.dynamic = set_dynamic_batching
        self.compiled_batch = int(module.compiled_batch[0]) if hasattr(module, "compiled_batch") else None
        self.first_call = True
        _open_runtime(self.device_ids)
        _record(call="DataParallel", cores=self.device_ids, dynamic=bool(set_dynamic_batching))

    def disable_dynamic_batching(self):
        self.dynamic = False

    def __call__(self, *inputs):
        batch, cores = int(inputs[0].shape[0]), len(self.device_ids)
        compiled = self.compiled_batch or max(1, batch // cores)
        if not self.dynamic:
            if batch % cores or batch // cores != compiled:
                raise RuntimeError(
                    "DataParallel with dynamic batching disabled needs input.shape[0] / len(device_ids) == the "
                    f"compiled batch: {batch} / {cores} != {compiled}")
            pieces = [torch.chunk(x, cores, dim=0) for x in inputs]
        else:
            pieces = [torch.split(x, compiled, dim=0) for x in inputs]
        short = compiled - int(pieces[0][-1].shape[0])
        if short:  # dynamic batching pads the last piece to the compiled batch and drops the padding after
            pieces = [list(p[:-1]) + [torch.cat([p[-1], p[-1][:1].expand(short, *p[-1].shape[1:])])]
                      for p in pieces]
        outputs = [self.module(*parts) for parts in zip(*pieces, strict=False)]
        if self.first_call:
            self.first_call = False
            _record(call="DataParallel.forward", batch=batch, per_core=[int(p.shape[0]) for p in pieces[0]],
                    inputs=len(inputs))
        if isinstance(outputs[0], tuple):
            joined = tuple(torch.cat(parts, dim=0) for parts in zip(*outputs, strict=False))
            return tuple(t[:batch] for t in joined)
        return torch.cat(outputs, dim=0)[:batch]
