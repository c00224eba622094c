"""The Neuron stand-ins keep the real libraries' documented rules (DESIGN.md §11): a double that accepts
anything would hide defects like flags that never reach the compiler."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

STAND_INS = Path(__file__).resolve().parents[1] / "doubles" / "python"


@pytest.fixture
def torch_neuronx(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(STAND_INS))
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURONX_LOG", str(tmp_path / "calls.log"))
    sys.modules.pop("torch_neuronx", None)
    import torch_neuronx

    yield torch_neuronx
    sys.modules.pop("torch_neuronx", None)


def test_a_traced_graph_is_static_even_after_save_and_load(torch_neuronx, tmp_path):
    model = torch.nn.Linear(4, 3).eval()
    traced = torch_neuronx.trace(model, (torch.randn(2, 4),), compiler_args=["--auto-cast", "none"],
                                 compiler_workdir=str(tmp_path / "work"))
    torch.jit.save(traced, tmp_path / "m.pt")
    loaded = torch.jit.load(tmp_path / "m.pt")
    assert loaded(torch.randn(2, 4)).shape == (2, 3)
    with pytest.raises(RuntimeError, match=r"compiled for \[2, 4\]"):
        loaded(torch.randn(5, 4))
    assert "--auto-cast none" in (tmp_path / "work" / "command.txt").read_text()


def test_data_parallel_without_dynamic_batching_holds_the_documented_rule(torch_neuronx):
    traced = torch_neuronx.trace(torch.nn.Linear(4, 3).eval(), torch.randn(1, 4))
    parallel = torch_neuronx.DataParallel(traced, device_ids=[0, 1], set_dynamic_batching=False)
    assert parallel(torch.randn(2, 4)).shape == (2, 3)  # input.shape[0] / len(device_ids) == traced batch
    with pytest.raises(RuntimeError, match="4 / 2 != 1"):
        parallel(torch.randn(4, 4))
    dynamic = torch_neuronx.DataParallel(traced, device_ids=[0, 1])
    assert dynamic(torch.randn(3, 4)).shape == (3, 3)  # dynamic batching: cut, padded, spread, joined
