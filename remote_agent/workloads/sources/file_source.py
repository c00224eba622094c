"""``file:PATH[:FUNCTION]``: the user's own Python file, sent to the host inside the spec.

The contract (docs/model.md, "Your own model file"):

    def build(batch_size, **model_args) -> dict:
        return {"model": a torch.nn.Module,
                "inputs": a tuple of tensors in forward's order, or a dict name -> tensor,
                "loss": optional, loss(outputs, inputs) -> scalar tensor (training needs it unless
                        the outputs carry .loss),
                "tokens_per_sample": optional, for tokens/s}

A function with a ``seq_len`` parameter also gets ``--seq-len``.  Every failure is
one sentence naming the file, the line and the message of the user's own exception.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import traceback
from collections import OrderedDict
from typing import Any, Dict, Optional

from remote_agent.workloads import synthetic
from remote_agent.workloads.problems import SpecProblem
from remote_agent.workloads.under_test import Batch, ModelUnderTest, parameter_count

CONTRACT = ("a dict with 'model' (a torch.nn.Module) and 'inputs' (a tuple of tensors in forward's order, or a "
            "dict of name -> tensor), and optionally 'loss' (loss(outputs, inputs) -> scalar tensor)")


def _where(exc: BaseException, path: str) -> str:
    """``line 12`` of the user's file in the exception's traceback (the deepest frame there)."""
    line = getattr(exc, "lineno", None) if isinstance(exc, SyntaxError) else None
    for frame in traceback.extract_tb(exc.__traceback__):
        if os.path.abspath(frame.filename) == os.path.abspath(path):
            line = frame.lineno
    return " line %d" % line if line else ""


def _describe_exc(exc: BaseException) -> str:
    if isinstance(exc, SyntaxError):
        return "SyntaxError: %s" % (exc.msg or exc)
    text = str(exc).strip().splitlines()
    return "%s: %s" % (type(exc).__name__, text[-1] if text else "")


def load_module(model_file: Dict[str, Any], workdir: str) -> Any:
    """Write the file's text into the run's folder and import it (its own folder first on sys.path)."""
    text = model_file.get("text")
    name = model_file.get("name") or "model.py"
    if not isinstance(text, str):
        raise SpecProblem("the text of model file %s did not reach the host" % name)
    folder = os.path.join(workdir, "model")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)
    module_name = "neuronbench_user_model_%s" % model_file.get("sha256", "x")[:12]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise SpecProblem("model file %s cannot be imported as Python" % name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:  # a file may call sys.exit() at import; Ctrl-C still stops us
        raise SpecProblem("model file %s failed to import:%s %s" % (name, _where(exc, path), _describe_exc(exc))) \
            from None
    module.__neuronbench_path__ = path
    return module


def call_builder(module: Any, function: str, name: str, batch_size: int, model_args: Dict[str, Any],
                 seq_len: Optional[int]) -> Dict[str, Any]:
    builder = getattr(module, function, None)
    if not callable(builder):
        defined = sorted(k for k, v in vars(module).items()
                         if callable(v) and not k.startswith("_") and getattr(v, "__module__", None) == module.__name__)
        raise SpecProblem("model file %s has no function %s(batch_size, **model_args)%s"
                          % (name, function, " (it defines %s)" % ", ".join(defined[:8]) if defined else ""))
    kwargs = dict(model_args)
    try:
        params = inspect.signature(builder).parameters
    except (TypeError, ValueError):
        params = {}
    if seq_len is not None:
        if "seq_len" not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values()):
            raise SpecProblem("--seq-len was given but %s() in %s takes no seq_len parameter: add one, or leave "
                              "out --seq-len" % (function, name))
        kwargs["seq_len"] = seq_len
    try:
        built = builder(batch_size, **kwargs)
    except TypeError as exc:
        if "argument" in str(exc) and _raised_by_call(exc):
            raise SpecProblem("%s() in %s cannot be called as %s(%d%s): %s" % (
                function, name, function, batch_size,
                "".join(", %s=%r" % item for item in sorted(kwargs.items())), exc)) from None
        raise SpecProblem("%s(batch_size=%d) in %s raised%s %s" % (
            function, batch_size, name, _where(exc, module.__neuronbench_path__), _describe_exc(exc))) from None
    except Exception as exc:
        raise SpecProblem("%s(batch_size=%d) in %s raised%s %s" % (
            function, batch_size, name, _where(exc, module.__neuronbench_path__), _describe_exc(exc))) from None
    return built


def _raised_by_call(exc: TypeError) -> bool:
    """The TypeError came from binding the call's arguments, not from inside the function."""
    frames = traceback.extract_tb(exc.__traceback__)
    return len(frames) <= 1


def check_contract(built: Any, function: str, name: str) -> None:
    import torch

    what = "%s() in %s" % (function, name)
    if not isinstance(built, dict):
        raise SpecProblem("%s returned %s; the contract is %s" % (what, type(built).__name__, CONTRACT))
    missing = [key for key in ("model", "inputs") if key not in built]
    if missing:
        raise SpecProblem("%s returned a dict without %s; the contract is %s" % (what, " and ".join(missing), CONTRACT))
    if not isinstance(built["model"], torch.nn.Module):
        raise SpecProblem("%s returned 'model' as %s, not a torch.nn.Module" % (what, type(built["model"]).__name__))
    inputs = built["inputs"]
    if isinstance(inputs, torch.Tensor):
        inputs = built["inputs"] = (inputs,)
    if isinstance(inputs, list):
        inputs = built["inputs"] = tuple(inputs)
    values = inputs.values() if isinstance(inputs, dict) else inputs if isinstance(inputs, tuple) else None
    if values is None or not len(inputs):
        raise SpecProblem("%s returned 'inputs' as %s; give a tuple of tensors in forward's order, or a dict of "
                          "name -> tensor" % (what, type(inputs).__name__ if values is None else "an empty one"))
    bad = [str(k) for k, v in (inputs.items() if isinstance(inputs, dict) else enumerate(inputs))
           if not isinstance(v, torch.Tensor)]
    if bad:
        raise SpecProblem("%s returned inputs that are not tensors: %s" % (what, ", ".join(bad)))
    if "loss" in built and built["loss"] is not None and not callable(built["loss"]):
        raise SpecProblem("%s returned 'loss' that is not callable (give loss(outputs, inputs) -> scalar)" % what)


def build(path: str, function: str, spec: Any, batch_size: int, seq_len: Optional[int],
          workdir: str) -> ModelUnderTest:
    import torch

    model_file = spec.model_file or {}
    name = model_file.get("name") or os.path.basename(path)
    module = load_module(model_file, workdir)
    torch.manual_seed(spec.seed)
    built = call_builder(module, function, name, batch_size, spec.model_args, seq_len)
    check_contract(built, function, name)
    model, example = built["model"], built["inputs"]
    positional = not isinstance(example, dict)
    names = ["input%d" % k for k in range(len(example))] if positional else [str(k) for k in example]
    tensors = list(example) if positional else list(example.values())
    user_loss = built.get("loss")

    def make_batch(size: int, seed: int, labels: bool) -> Batch:
        # The user's own inputs for the first batch of the run (seed 0 is the spec's seed), fresh ones
        # drawn like them for every other seed (the check, the host's data loader).
        fresh = []
        for tensor in tensors:
            made = tensor.clone() if seed == spec.seed and tensor.shape[:1] == (size,) else \
                synthetic.tiled_like(tensor, size, seed + len(fresh))
            if made is None:
                raise SpecProblem("%s's inputs have a first dimension of %d, which does not divide batch %d"
                                  % (name, tensor.shape[0], size))
            fresh.append(made)
        return Batch(OrderedDict(zip(names, fresh)))

    loss = None
    if callable(user_loss):
        def loss(outputs: Any, batch: Batch) -> Any:
            given = batch.tensors() if positional else dict(batch.inputs)
            return user_loss(outputs, given)

    tokens = built.get("tokens_per_sample")
    describe = {"source": "file", "name": name, "path": path, "function": function,
                "class": type(model).__name__, "parameters": parameter_count(model),
                "sha256": model_file.get("sha256"), "libraries": {}}
    mut = ModelUnderTest(model, make_batch, describe, positional=positional, loss=loss,
                         seq_len=seq_len if seq_len is not None else (tokens if isinstance(tokens, int) else None),
                         input_names=names)
    return mut
