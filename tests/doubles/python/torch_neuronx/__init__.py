"""Test stand-in for ``torch_neuronx`` (the Neuron SDK's PyTorch package) on machines without Neuron.

It lives under tests/ only: the tests put ``tests/doubles/python`` on PYTHONPATH (with a stand-in
``/dev/neuron0`` through NEURONBENCH_NEURON_DEVICE_GLOB) so that the product's real neuron backend
code runs end to end: ``trace``, ``torch.jit.save``/``load``, ``DataParallel`` over ``--nproc`` cores
and the batch it is fed.  What it replaces, and how:

- ``trace(model, example_inputs)``: the real one compiles with neuronx-cc and returns a TorchScript
  module that runs on a NeuronCore; here it is a TorchScript trace that runs on the CPU.  Both are
  saved with ``torch.jit.save`` and loaded with ``torch.jit.load``.
- ``DataParallel(module, device_ids, set_dynamic_batching=...)``: the real one loads one copy of the
  module per NeuronCore and splits each input tensor along dim 0 over them (a call takes the inputs
  positionally, as the traced module does); with dynamic batching off each input must be exactly
  (cores x the traced batch).  Outputs (a tensor or a tuple of them) are joined along dim 0 again.
  Here the copies are the same CPU module, and with dynamic batching off only a batch the cores do not
  divide is refused: a batch of another multiple of the cores than the traced one is not.

Every call is appended to the file named by ``NEURONBENCH_FAKE_NEURONX_LOG`` (if set), one JSON
object a line, so a test can check what the backend asked of torch_neuronx.
"""
import json
import os

__version__ = "2.9.0.2.11.0+testdouble"


def _record(**event):
    path = os.environ.get("NEURONBENCH_FAKE_NEURONX_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")


def _batch(inputs):
    first = inputs[0] if isinstance(inputs, (tuple, list)) else inputs
    return int(first.shape[0])


def trace(func, example_inputs, *_args, **_kwargs):
    import torch

    _record(call="trace", batch=_batch(example_inputs), pid=os.getpid(),
            inputs=len(example_inputs) if isinstance(example_inputs, (tuple, list)) else 1)
    with torch.no_grad():
        return torch.jit.trace(func, example_inputs, check_trace=False)


class DataParallel:
    """One model copy per NeuronCore in ``device_ids``; each call splits its input over them."""

    def __init__(self, module, device_ids=None, dim=0, set_dynamic_batching=True):
        if dim != 0:
            raise ValueError("this stand-in splits along dim 0 only")
        self.module = module
        self.device_ids = list(device_ids) if device_ids is not None else [0]
        self.dynamic = set_dynamic_batching
        self.traced_batch = None
        _record(call="DataParallel", cores=self.device_ids, dynamic=bool(set_dynamic_batching))

    def __call__(self, *inputs):
        import torch

        batch, cores = _batch(inputs), len(self.device_ids)
        if not self.dynamic and batch % cores:
            raise RuntimeError(f"DataParallel with dynamic batching off needs a batch divisible by the {cores} "
                               f"NeuronCores, got {batch}")
        per_input = [torch.chunk(x, cores, dim=0) for x in inputs]
        outputs = [self.module(*parts) for parts in zip(*per_input, strict=True)]
        if self.traced_batch is None:
            self.traced_batch = [int(chunk.shape[0]) for chunk in per_input[0]]
            _record(call="DataParallel.forward", batch=batch, per_core=self.traced_batch, inputs=len(inputs))
        if isinstance(outputs[0], tuple):
            return tuple(torch.cat(parts, dim=0) for parts in zip(*outputs, strict=True))
        return torch.cat(outputs, dim=0)
