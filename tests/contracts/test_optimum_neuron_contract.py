"""optimum-neuron's stand-in (tests/doubles/python/optimum) held to the published optimum-neuron 0.4.5 wheel.

mypy stubtest's habit: both are read (``ast``, nothing imported: the real package needs torch_neuronx and a Neuron
device), every public method the stand-in has must exist in the real class with the same parameters (names, kinds,
defaults), decorators and annotations where both annotate; a difference fails with the name and both signatures.
ALLOWED says why each known gap exists; an entry that stops differing fails too, so the list stays true.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.contracts.real_packages import wheel
from tests.contracts.signatures import SourceTree, compare_class, judge

REPO = Path(__file__).resolve().parent.parent.parent
STAND_IN = REPO / "tests" / "doubles" / "python"
STAND_IN_MODULE = "optimum/neuron/__init__.py"
VERSION = "0.4.5"
# stand-in class -> (where the real one is defined in the wheel, extra members compared); each class's members
# include its bases' (NeuronPreTrainedModel's export, NeuronConfig's save_pretrained), on both sides.
CLASSES = {
    "NeuronModelForCausalLM": ("optimum/neuron/models/inference/modeling_utils.py", ()),
    "NxDNeuronConfig": ("optimum/neuron/models/inference/backend/config.py", ("__init__",)),
}
# Known gaps, each with its reason (none today: the stand-in spells every signature as 0.4.5 does).
ALLOWED: dict[str, str] = {}


@pytest.fixture(scope="module")
def real() -> SourceTree:
    path, why = wheel("optimum-neuron", VERSION)
    if path is None:
        pytest.skip(why)
    return SourceTree(path)


def contract_errors(stand_in: SourceTree, real: SourceTree) -> dict[str, str]:
    errors: dict[str, str] = {}
    for name, (real_path, also) in CLASSES.items():
        errors.update(compare_class(stand_in, STAND_IN_MODULE, real, real_path, name, "optimum.neuron", also))
    return errors


def test_the_stand_in_spells_every_call_as_optimum_neuron_0_4_5_does(real):
    problems = judge(contract_errors(SourceTree(STAND_IN), real), ALLOWED)
    assert not problems, "\n".join(problems)


def test_the_names_the_product_imports_are_the_real_packages_exports(real):
    """``from optimum.neuron import NeuronModelForCausalLM`` works on the real package (its lazy _import_structure)."""
    text = real.text("optimum/neuron/__init__.py")
    assert '_import_structure["models.inference.modeling_utils"] = ["NeuronModelForCausalLM"' in text
    assert "from .version import __version__" in text
    assert 'VERSION = "0.4.5"'.replace("VERSION", "__version__") in real.text("optimum/neuron/version.py")


def test_a_stand_in_that_drifts_from_the_real_signature_fails_naming_both(real, tmp_path):
    """The check has teeth: the stand-in with 0.0.28's export keywords on from_pretrained, or a default changed."""
    text = (STAND_IN / STAND_IN_MODULE).read_text()
    drifted = text.replace("        model_id: str | Path,\n        **kwargs,\n    ) -> NeuronPreTrainedModel:",
                           "        model_id: str | Path,\n        export: bool = False,\n        **kwargs,\n"
                           "    ) -> NeuronPreTrainedModel:", 1)
    drifted = drifted.replace("load_weights: bool | None = False,", "load_weights: bool | None = True,", 1)
    assert drifted.count("export: bool = False") == 1 and "load_weights: bool | None = True" in drifted
    (tmp_path / "optimum" / "neuron").mkdir(parents=True)
    (tmp_path / STAND_IN_MODULE).write_text(drifted)
    problems = judge(contract_errors(SourceTree(tmp_path), real), ALLOWED)
    assert len(problems) == 2, problems
    from_pretrained = next(p for p in problems if p.startswith("optimum.neuron.NeuronModelForCausalLM.from_pretrained"))
    assert "parameters (name, kind) differ" in from_pretrained
    assert "stand-in: @classmethod def from_pretrained(cls, model_id: str | Path, export: bool = False, **kwargs)" \
        in from_pretrained
    assert "real:     @classmethod def from_pretrained(cls, model_id: str | Path, **kwargs) -> NeuronPreTrainedModel" \
        in from_pretrained and "models/inference/modeling_utils.py:" in from_pretrained
    export = next(p for p in problems if p.startswith("optimum.neuron.NeuronModelForCausalLM.export"))
    assert "default of load_weights: True != False" in export


def test_a_stale_allowlist_entry_fails_too(real):
    problems = judge(contract_errors(SourceTree(STAND_IN), real),
                     {"optimum.neuron.NeuronModelForCausalLM.generate": "a gap that was closed"})
    assert problems == ["optimum.neuron.NeuronModelForCausalLM.generate is allowlisted (a gap that was closed) but "
                        "agrees with the real package now: remove it from the allowlist"]
