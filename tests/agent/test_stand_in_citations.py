"""The Neuron stand-ins whose library has no public source are held to the public pages (DESIGN.md §12).

torch-neuronx (XLA era) and TorchNeuron publish no source to compare signatures with (tests/contracts/ does that
for the packages that do).  So each rule a stand-in keeps names the AWS Neuron documentation page it comes from,
in the stand-in's docstring, and these tests check that:

- every ``- rule:`` block carries at least one ``source:`` on the Neuron docs;
- every public name the stand-in defines (what the product can call) is named by some rule, so a call added to
  a stand-in without a page to back it fails here;
- where a page prints a signature, the stand-in's parameters are that signature;
- where a page gives an example, the stand-in behaves as the page says (the XLA stand-in runs on this torch).

The stand-ins are read with ``ast``: the native one needs torch 2.13 to import, this Python has 2.9.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

DOUBLES = Path(__file__).resolve().parents[1] / "doubles"
STAND_INS = {
    "torch-neuronx (XLA era)": DOUBLES / "python" / "torch_neuronx" / "__init__.py",
    "TorchNeuron (native)": DOUBLES / "python-native" / "torch_neuronx" / "__init__.py",
}
DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/"
INFERENCE_API = DOCS + "en/latest/frameworks/torch/torch-neuronx/api-reference-guide/inference/"
TRACE_PAGE = INFERENCE_API + "api-torch-neuronx-trace.html"
DATA_PARALLEL_PAGE = INFERENCE_API + "api-torch-neuronx-data-parallel.html"
# The signatures as the pages print them (their ``.. py:function::`` lines).
DOCUMENTED = {
    "trace": (TRACE_PAGE, "func, example_inputs, *_, input_output_aliases={}, compiler_workdir=None, "
                          "compiler_args=None, partitioner_config=None, inline_weights_to_neff=True, "
                          "cpu_backend=False"),
    "DataParallel": (DATA_PARALLEL_PAGE, "model, device_ids=None, dim=0, set_dynamic_batching=True"),
}


def rules(path: Path) -> list[tuple[str, list[str]]]:
    """``(rule text, its source URLs)`` for every ``- rule:`` block of the module's docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    blocks = re.split(r"^- rule: ", doc, flags=re.MULTILINE)[1:]
    out = []
    for block in blocks:
        body = block.split("\n\n")[0]  # a blank line ends the list
        text = " ".join(line.strip() for line in body.splitlines() if not line.strip().startswith("source:"))
        out.append((text, re.findall(r"^\s*source: (\S+)", body, flags=re.MULTILINE)))
    return out


def public_names(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    return [node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
            and not node.name.startswith("_")]


@pytest.mark.parametrize("name", list(STAND_INS))
def test_every_rule_a_stand_in_keeps_cites_its_public_page(name):
    found = rules(STAND_INS[name])
    assert len(found) >= 5, f"{name}: its docstring lists no rules"
    uncited = [text[:80] for text, sources in found if not sources]
    assert not uncited, f"{name}: rules without a source: {uncited}"
    elsewhere = [url for _, sources in found for url in sources if not url.startswith(DOCS)]
    assert not elsewhere, f"{name}: sources that are not the Neuron documentation: {elsewhere}"


@pytest.mark.parametrize("name", list(STAND_INS))
def test_every_call_a_stand_in_offers_is_named_by_a_cited_rule(name):
    cited = " ".join(text for text, sources in rules(STAND_INS[name]) if sources)
    unbacked = [call for call in public_names(STAND_INS[name]) if not re.search(rf"\b{call}\b", cited)]
    assert not unbacked, f"{name}: public names no cited rule speaks of: {unbacked}"


def _parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    args = function.args
    positional = [a.arg for a in args.args if a.arg != "self"]
    defaults = [ast.unparse(d) for d in args.defaults]
    shown = positional[:len(positional) - len(defaults)] + [
        f"{a}={d}" for a, d in zip(positional[len(positional) - len(defaults):], defaults, strict=True)]
    if args.vararg:
        shown.append(f"*{args.vararg.arg}")
    shown += [f"{a.arg}={ast.unparse(d)}" if d is not None else a.arg
              for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True)]
    return ", ".join(shown)


@pytest.mark.parametrize("call", list(DOCUMENTED))
def test_the_xla_stand_ins_signatures_are_the_documented_ones(call):
    page, documented = DOCUMENTED[call]
    tree = ast.parse(STAND_INS["torch-neuronx (XLA era)"].read_text())
    [node] = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == call]
    function = node if isinstance(node, ast.FunctionDef) else next(
        n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    assert _parameters(function) == documented, f"{call}: the stand-in differs from {page}"


# ------------------------------------------------------------------ the pages' own examples, on the XLA stand-in
@pytest.fixture
def torch_neuronx(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(DOUBLES / "python"))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("torch_neuronx", None)
    import torch_neuronx

    yield torch_neuronx
    sys.modules.pop("torch_neuronx", None)


def test_the_data_parallel_pages_example_holds_on_the_stand_in(torch_neuronx):
    """The page's example: traced at batch 1, two cores, dynamic batching disabled; a batch of 4 "won't work"
    (4 / 2 != 1) and a batch of 2 will (DATA_PARALLEL_PAGE, torch-neuronx-dataparallel-example-disable-...)."""
    import torch

    model_neuron = torch_neuronx.trace(torch.nn.Linear(4, 3).eval(), torch.rand([1, 4]))
    model_parallel = torch_neuronx.DataParallel(model_neuron, device_ids=[0, 1], dim=0)
    model_parallel.disable_dynamic_batching()
    with pytest.raises(RuntimeError):
        model_parallel(torch.rand([4, 4]))
    assert model_parallel(torch.rand([2, 4])).shape == (2, 3)


def test_the_trace_pages_static_shape_rule_holds_on_the_stand_in_after_save_and_load(torch_neuronx, tmp_path):
    """TRACE_PAGE: tensor shapes at inference that differ from the example_inputs' "will result in an error"."""
    import torch

    traced = torch_neuronx.trace(torch.nn.Linear(4, 3).eval(), (torch.randn(2, 4),))
    torch.jit.save(traced, tmp_path / "m.pt")
    loaded = torch.jit.load(tmp_path / "m.pt")
    assert loaded(torch.randn(2, 4)).shape == (2, 3)
    with pytest.raises(RuntimeError, match=r"compiled for \[2, 4\]"):
        loaded(torch.randn(5, 4))
