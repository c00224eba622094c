"""The numerical check's arithmetic: errors relative to the output's scale, finiteness, tolerances."""
from __future__ import annotations

import math

import torch

from remote_agent.workloads import check


def test_errors_are_measured_against_the_reference_scale():
    want = (torch.tensor([[10.0, -4.0], [2.0, 0.0]]),)
    got = (torch.tensor([[10.0, -4.05], [2.0, 0.02]]),)
    part = check.compare(got, want)
    assert math.isclose(part["max_abs_err"], 0.05, rel_tol=1e-5)
    assert math.isclose(part["max_rel_err"], 0.005, rel_tol=1e-5)  # 0.05 of a largest |value| of 10
    block = check.summarize([part], "bf16", "w")
    assert block["agrees"] is True and block["tolerance"] == 0.1
    block = check.summarize([part], "fp32", "w")
    assert block["agrees"] is False and block["tolerance"] == 1e-3
    assert "disagrees with the eager model" in check.warning(block, "batch 4")


def test_nan_and_shape_mismatches_never_agree():
    want = (torch.ones(2, 3),)
    nan = check.summarize([check.compare((torch.tensor([[1.0, float("nan"), 1.0]] * 2),), want)], "fp32", "w")
    assert nan["finite"] is False and nan["agrees"] is False and nan["max_rel_err"] is None
    assert "NaN or infinity" in check.warning(nan, "batch 1")
    shape = check.summarize([check.compare((torch.ones(3, 2),), want)], "fp32", "w")
    assert shape["agrees"] is False and "has shape [3, 2], the eager one [2, 3]" in shape["note"]
    count = check.summarize([check.compare((torch.ones(2, 3), torch.ones(1)), want)], "fp32", "w")
    assert count["agrees"] is False and "returned 2 outputs, the eager one 1" in count["note"]


def test_a_reference_that_overflows_judges_nothing():
    block = check.summarize([check.compare((torch.ones(2),), (torch.tensor([1.0, float("inf")]),))], "fp32", "w")
    assert block["agrees"] is None and "eager fp32 model itself" in block["note"]
    assert check.warning(block, "batch 1") is None


def test_neuron_fp32_is_held_to_bf16_unless_auto_cast_is_off():
    assert check.compute_precision("fp32", "neuron", "") == "bf16"
    assert check.compute_precision("fp32", "neuron", "--model-type transformer --auto-cast none") == "fp32"
    assert check.compute_precision("fp32", "xla", "") == "fp32"
    assert check.compute_precision("bf16", "cpu", "") == "bf16"


def test_the_first_loss_against_the_eager_loss():
    assert check.check_loss(6.9, 6.9, "fp32")["agrees"] is True
    off = check.check_loss(7.2, 6.9, "fp32")
    assert off["agrees"] is False and math.isclose(off["max_rel_err"], 0.3 / 6.9, rel_tol=1e-6)
    nan = check.check_loss(float("nan"), 6.9, "bf16")
    assert nan["finite"] is False and nan["agrees"] is False and nan["loss"] is None
