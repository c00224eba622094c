"""The model under test: what train.py, infer.py and the backends take, whatever its source.

A source (timm, torchvision, hf, file; see ``sources``) turns the spec into a
``ModelUnderTest``: the module with random weights, a function that makes a batch
of synthetic inputs for a batch size, the loss for training, and a description
for the Result.  Nothing past this point knows about images or tokens.

Inputs are an ordered mapping name -> tensor, in the order ``forward`` takes them.
``positional`` sources (timm, torchvision, a file whose inputs are a tuple) are
called ``model(*inputs)``; the others by name, ``model(**inputs)``.  Tracing always
goes through ``traceable``: a wrapper that maps positional tensors to the model's
argument names (GPT-2's ``forward`` puts ``past_key_values`` second, so a bare
``(ids, mask)`` tuple would bind the mask there) and flattens whatever the model
returns (tensor, tuple, dict, ModelOutput) into a tuple of tensors.
"""
from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any, Callable, ContextManager, Dict, List, Optional, Tuple


class Batch:
    """One batch of synthetic inputs (on the host, floats in fp32) and the labels the loss needs."""

    def __init__(self, inputs: "OrderedDict[str, Any]", labels: Any = None) -> None:
        self.inputs = inputs
        self.labels = labels

    def to(self, device: Any, float_dtype: Any) -> Batch:
        """On ``device``; floating tensors in ``float_dtype`` (token ids and masks keep theirs)."""
        return Batch(OrderedDict((name, move(t, device, float_dtype)) for name, t in self.inputs.items()),
                     None if self.labels is None else move(self.labels, device, float_dtype))

    def tensors(self) -> Tuple[Any, ...]:
        return tuple(self.inputs.values())

    def describe(self) -> List[Dict[str, Any]]:
        """Names, shapes and dtypes, for the Result."""
        return [{"name": name, "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
                for name, t in self.inputs.items()]


def move(tensor: Any, device: Any, float_dtype: Any) -> Any:
    if tensor.is_floating_point():
        return tensor.to(device=device, dtype=float_dtype)
    return tensor.to(device=device)


class ModelUnderTest:
    """A module with random weights, its synthetic inputs, its loss, and what to say about it.

    Args:
        module: the ``torch.nn.Module`` on the host, in fp32.
        make_batch: ``(batch_size, seed, labels) -> Batch``; the same seed gives the same batch.
        describe: the Result's ``model`` block (source, name, class, parameters, ...).
        positional: call ``module(*inputs)`` rather than ``module(**inputs)``.
        loss: ``(outputs, batch) -> scalar``; None: the outputs carry ``.loss`` (labels passed in).
        labels_kwarg: training passes ``batch.labels`` under this name (Hugging Face's ``labels``).
        call_kwargs: fixed keyword arguments for inference (``return_dict=False, use_cache=False``).
        seq_len: the sequence length of text inputs (None for models without one).
        notes: sentences for the run's log (a stand-in loss, a capped length).
        input_names: ``forward``'s names of the inputs, in order (keyword sources).
        tracing: a context manager factory entered while the model is compiled (Hugging Face decoders
            swap in attention masks a tracer can record); None: nothing to do.
    """

    def __init__(self, module: Any, make_batch: Callable[[int, int, bool], Batch], describe: Dict[str, Any],
                 positional: bool, loss: Optional[Callable[[Any, Batch], Any]] = None,
                 labels_kwarg: Optional[str] = None, call_kwargs: Optional[Dict[str, Any]] = None,
                 seq_len: Optional[int] = None, notes: Optional[List[str]] = None,
                 input_names: Optional[List[str]] = None,
                 tracing: Optional[Callable[[], ContextManager[Any]]] = None) -> None:
        self.module = module
        self.input_names = list(input_names or [])
        self.make_batch = make_batch
        self.description = describe
        self.positional = positional
        self.loss_fn = loss
        self.labels_kwarg = labels_kwarg
        self.call_kwargs = dict(call_kwargs or {})
        self.seq_len = seq_len
        self.notes = list(notes or [])
        self._tracing = tracing

    def tracing(self) -> ContextManager[Any]:
        """Entered around the backend's compile (trace) of this model."""
        return self._tracing() if self._tracing is not None else contextlib.nullcontext()

    @property
    def tokens_per_sample(self) -> Optional[int]:
        """Text models: one token per position of the sequence (the figure tokens/s counts)."""
        return self.seq_len

    def training_forward(self, module: Any, batch: Batch) -> Any:
        """The outputs of one training forward pass (labels given where the model computes its loss)."""
        if self.positional:
            return module(*batch.tensors())
        kwargs = dict(batch.inputs)
        if self.labels_kwarg and batch.labels is not None:
            kwargs[self.labels_kwarg] = batch.labels
        return module(**kwargs)

    def loss(self, outputs: Any, batch: Batch) -> Any:
        if self.loss_fn is not None:
            return self.loss_fn(outputs, batch)
        return outputs_loss(outputs)

    def describe(self, batch: Optional[Batch] = None) -> Dict[str, Any]:
        """The Result's ``model`` block, with the inputs of ``batch`` when given."""
        info = dict(self.description)
        if batch is not None:
            info["inputs"] = batch.describe()
        info["seq_len"] = self.seq_len
        info["tokens_per_sample"] = self.tokens_per_sample
        return info


def outputs_loss(outputs: Any) -> Any:
    """``outputs.loss`` or ``outputs["loss"]``; the error says what the contract asks for."""
    loss = getattr(outputs, "loss", None)
    if loss is None and isinstance(outputs, dict):
        loss = outputs.get("loss")
    if loss is None:
        from remote_agent.workloads.problems import SpecProblem

        raise SpecProblem("training needs a loss: the model's outputs carry no .loss (a file model can return "
                          "'loss': loss(outputs, inputs) from its function)")
    return loss


def flatten_outputs(outputs: Any) -> Tuple[Any, ...]:
    """Every tensor in ``outputs`` (a tensor, tuple, list, dict or ModelOutput), in order."""
    import torch

    if isinstance(outputs, torch.Tensor):
        return (outputs,)
    if isinstance(outputs, dict):  # ModelOutput is an OrderedDict holding only the fields that are set
        values = list(outputs.values())
    elif isinstance(outputs, (list, tuple)):
        values = list(outputs)
    else:
        return ()
    flat: List[Any] = []
    for value in values:
        flat.extend(flatten_outputs(value))
    return tuple(flat)


_WRAPPER: Dict[str, Any] = {}


def traceable(mut: ModelUnderTest, module: Any = None) -> Any:
    """A module taking the inputs positionally and returning a flat tuple of tensors (what tracers want).

    ``module`` defaults to the model under test's own (pass a copy, e.g. one cast to bf16).
    """
    if "class" not in _WRAPPER:
        import torch

        class PositionalToNamed(torch.nn.Module):
            """Binds positional tensors to the model's argument names; flattens its outputs."""

            def __init__(self, model: Any, names: Optional[List[str]], kwargs: Dict[str, Any]) -> None:
                super().__init__()
                self.model = model
                self.names = names
                self.kwargs = kwargs

            def forward(self, *tensors: Any) -> Any:
                if self.names is None:
                    out = self.model(*tensors, **self.kwargs)
                else:
                    out = self.model(**dict(zip(self.names, tensors)), **self.kwargs)
                flat = flatten_outputs(out)
                if not flat:
                    raise TypeError("the model returned %s, which holds no tensor" % type(out).__name__)
                return flat

        _WRAPPER["class"] = PositionalToNamed
    names = None if mut.positional else list(mut.input_names)
    return _WRAPPER["class"](mut.module if module is None else module, names, mut.call_kwargs)


def parameter_count(module: Any) -> int:
    """Every parameter, counted once: ``parameters()`` yields a tied weight (GPT-2's embeddings) once."""
    return sum(param.numel() for param in module.parameters())
