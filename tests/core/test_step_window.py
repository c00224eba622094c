"""The rolling step time and throughput quoted live: the steady window's, on recorded real runs."""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from app.core.step_window import ROLLING_STEPS, SteadyWindow

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def recorded_steps(name: str) -> tuple[list[dict], dict]:
    events = [json.loads(line) for line in (RUNS / name).read_text().splitlines() if line.strip()]
    result = next(e for e in events if e["type"] == "result")["result"]
    return [e for e in events if e["type"] == "step"], result


@pytest.mark.parametrize("name", ["train-cpu-tiny.events.jsonl", "train-xla-tiny.events.jsonl"])
def test_the_last_figures_are_the_results_formula_over_the_last_steady_steps(name):
    steps, result = recorded_steps(name)
    window = SteadyWindow(result["spec"]["warmup"])
    for step in steps:
        window.add(step)
    first, last = result["train"]["window"]  # the Result's steady window
    steady = [s for s in steps if first <= s["i"] <= last][-ROLLING_STEPS:]
    assert len(window) == ROLLING_STEPS == len(steady)
    assert window.throughput == pytest.approx(sum(s["samples"] for s in steady) / sum(s["dt_s"] for s in steady))
    assert window.median_step_s == pytest.approx(statistics.median(s["dt_s"] for s in steady))


def test_a_window_as_long_as_the_run_gives_the_results_throughput():
    steps, result = recorded_steps("train-xla-tiny.events.jsonl")
    window = SteadyWindow(result["spec"]["warmup"], size=len(steps))
    for step in steps:
        window.add(step)
    assert window.throughput == pytest.approx(result["train"]["throughput_samples_per_s"])


def test_warm_up_and_compiled_steps_never_enter_and_a_compile_starts_the_window_afresh():
    window = SteadyWindow(warmup=2)
    entered = [window.add({"i": i, "dt_s": 1.0, "samples": 4, "compiled": i == 1}) for i in (1, 2)]
    assert entered == [False, False] and window.throughput is None and window.median_step_s is None
    assert window.add({"i": 3, "dt_s": 0.5, "samples": 4, "compiled": False})
    assert window.throughput == pytest.approx(8.0)
    assert not window.add({"i": 4, "dt_s": 9.0, "samples": 4, "compiled": True})
    assert len(window) == 0 and window.throughput is None
    window.add({"i": 5, "dt_s": 0.25, "samples": 4, "compiled": False})
    assert window.throughput == pytest.approx(16.0) and window.median_step_s == pytest.approx(0.25)
