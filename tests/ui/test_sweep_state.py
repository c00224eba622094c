"""A text model's inference sweep as the live view holds it: a row and a latency series per batch size and
sequence length, progress over all of them (a real recorded run: tests/data/runs/README.md)."""
from __future__ import annotations

import numpy as np
import pytest

from app.ui.models.run_state import LiveRunState
from tests.ui.conftest import recorded, spec_of


def test_a_recorded_sweep_of_batch_sizes_and_lengths_gives_a_row_and_a_series_each():
    events = recorded("infer-hf-tiny-bert-sweep.events.jsonl")
    spec = spec_of(events)
    state = LiveRunState("local", spec)
    fractions = []
    for event in events:
        state.apply(event)
        if event["type"] == "phase" and event["name"] == "measure" and event["state"] == "end":
            fractions.append(state.progress.fraction)
    assert fractions == [0.25, 0.5, 0.75, 1.0]  # four artefacts, not two batch sizes
    keys = [(1, 16), (1, 32), (4, 16), (4, 32)]
    assert list(state.sweep.rows) == keys
    result = state.result["infer"]
    for row, measured in zip(state.sweep.rows.values(), result, strict=True):
        assert (row.batch_size, row.seq_len) == (measured["batch_size"], measured["seq_len"])
        assert row.final and row.tokens_per_s == measured["tokens_per_s"] and row.check["agrees"]
    latency = state.latency.array()
    windows = [e for e in events if e["type"] == "latency"]
    for batch, length in keys:  # each artefact's windows, by its own key
        mine = latency[(latency[:, 1] == batch) & (latency[:, 5] == length)]
        assert list(mine[~np.isnan(mine[:, 2]), 2]) == pytest.approx(
            [w["p50_ms"] for w in windows if (w["batch_size"], w["seq_len"]) == (batch, length)])
    assert state.sweep.problems() == []
    assert {span.seq_len for span in state.phases if span.batch_size is not None} == {16, 32}
