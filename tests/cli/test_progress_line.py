"""The CLI's progress line quotes the live view's figures: the steady window's step time and throughput."""
from __future__ import annotations

import io
import json
import statistics
from pathlib import Path

from app.cli.progress import ProgressPrinter
from app.core.numbers import figure
from app.core.step_window import ROLLING_STEPS
from remote_agent.protocol import RunSpec

RUNS = Path(__file__).resolve().parents[1] / "data" / "runs"


def test_a_recorded_training_prints_the_rolling_throughput_of_its_steady_steps_only():
    events = [json.loads(line) for line in (RUNS / "train-cpu-tiny.events.jsonl").read_text().splitlines()]
    result = next(e for e in events if e["type"] == "result")["result"]
    spec = RunSpec.from_dict(result["spec"])
    stream = io.StringIO()  # not a terminal: one line per tenth of the way
    printer = ProgressPrinter("local", spec, stream=stream)
    for event in events:
        printer(event)
    lines = [line for line in stream.getvalue().splitlines() if " steps " in line]
    steps = [e for e in events if e["type"] == "step"]
    during_warmup = [line for line in lines if int(line.split("/")[0].split()[-1]) <= spec.warmup]
    assert during_warmup and all("samples/s" not in line for line in during_warmup)
    steady = [s for s in steps if s["i"] > spec.warmup][-ROLLING_STEPS:]
    expected = sum(s["samples"] for s in steady) / sum(s["dt_s"] for s in steady)
    assert lines[-1].startswith(f"[local] 100% {spec.steps}/{spec.steps} steps")
    assert f"{statistics.median(s['dt_s'] for s in steady):.3f} s/step  {figure(expected)} samples/s" in lines[-1]
