"""The live view's status line: --target-ci's interval as it shrinks, and MFU, from recorded runs."""
from __future__ import annotations

import copy

import pytest

from app.ui.models.run_state import LiveRunState
from app.ui.widgets.live_figures import known_figures
from tests.ui.conftest import recorded, spec_of
from tests.ui.test_live_view_cpu_host import run_view

VIT_B_TRAIN_FLOPS = 105_151_758_336.0  # what the agent counts for ViT-Base at 224 px (tests/agent/test_flops.py)


def as_todays_agent_sends(events: list[dict]) -> list[dict]:
    """The H100 recording (made before FLOPs were counted) with the fields the agent adds now."""
    events = copy.deepcopy(events)
    first_step = next(n for n, e in enumerate(events) if e["type"] == "step")
    setup_end = max(n for n, e in enumerate(events[:first_step]) if e["type"] == "phase" and e["name"] == "setup"
                    and e["state"] == "end")
    events[setup_end].update(flops_per_sample=VIT_B_TRAIN_FLOPS, matmul_dtype="bf16", backend="cuda", devices=1)
    result = next(e for e in events if e["type"] == "result")["result"]
    result["train"].update(flops_per_sample=VIT_B_TRAIN_FLOPS, matmul_dtype="bf16")
    return events


def test_the_interval_shrinks_in_the_status_line_as_the_steps_come():
    events = recorded("train-cpu-tiny-target-ci.events.jsonl")  # a real run with --target-ci
    spec = spec_of(events)
    state = LiveRunState("local", spec)
    shown = []
    for event in events:
        state.apply(event)
        if event["type"] == "step" and "ci_pct" in event:
            text = known_figures(state)[0]
            assert text.startswith("95% interval ±") and text.endswith(f"(target ±{spec.target_ci:g} %)")
            shown.append(event["ci_pct"])
    assert len(shown) >= 30 and shown[-1] < shown[0]
    result = next(e for e in events if e["type"] == "result")["result"]["train"]
    assert shown[-1] == pytest.approx(result["ci_pct"])


def test_mfu_is_in_the_status_line_while_the_h100_run_goes_and_after(make_window, qtbot):
    events = as_todays_agent_sends(recorded("h100-train-vit-base-bf16.events.jsonl"))
    state = LiveRunState("h100", spec_of(events))
    seen = []
    for event in events:
        state.apply(event)
        if event["type"] == "step" and state.latest_throughput():
            mfu = VIT_B_TRAIN_FLOPS * state.latest_throughput() / 989.5e12  # one H100 SXM, dense bf16
            assert f"MFU <b>{100 * mfu:.2g}%</b>" in known_figures(state)
            seen.append(mfu)
    assert seen and 0.03 < min(seen) <= max(seen) < 0.1  # the loader-bound seed loop: 3-10 % of the peak

    # Through the real window: the finished run shows the Result's figure, against the peak table.
    view = run_view(make_window, qtbot, events)
    assert "MFU <b>5.7%</b>" in view.figures.text()
    assert "MFU 5.7% of 1 × NVIDIA H100 SXM bf16 peak" in view.result_text.toPlainText()


def test_a_cpu_run_shows_no_mfu_rather_than_a_guess():
    events = recorded("train-cpu-tiny-target-ci.events.jsonl")
    state = LiveRunState("local", spec_of(events))
    for event in events:
        state.apply(event)
        assert not any("MFU" in part for part in known_figures(state))
    assert state.compute["flops_per_sample"] > 0  # counted, but a CPU has no peak to hold it to
