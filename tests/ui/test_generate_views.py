"""The app's side of generate: the form's "Generate", a recorded real run's calls in the live state, the Sweep tab."""
from __future__ import annotations

from app.core.presets import PRESETS
from app.ui.models.run_state import LiveRunState
from app.ui.widgets.sweep_view import SweepTable
from tests.ui.conftest import recorded, spec_of

RUN = "generate-cpu-tiny.events.jsonl"


def test_picking_generate_starts_from_the_tiny_random_llama(make_window):
    form = make_window().workload
    form.workload.setCurrentIndex(form.workload.findData("generate"))
    spec = form.spec()
    assert spec.to_dict() | {"model_file": None} == PRESETS["tiny-generate"].spec.to_dict()
    assert spec.model_file["name"] == "config.json"  # the shipped config travels with the spec
    assert spec.model == "hf:neuronbench/tiny-random-llama" and spec.input_lens == (32,)
    assert form.form.isRowVisible(form.input_lens) and not form.form.isRowVisible(form.steps)
    assert not form.form.isRowVisible(form.seq_lens)
    form.output_lens.setText("8,0")
    assert form.spec() is None and form.error_field == "output_lens"
    form.output_lens.setText("8,64")
    assert form.spec().output_lens == (8, 64)


def test_a_recorded_generate_run_gives_each_calls_ttft_and_tpot_and_a_row_per_point(qtbot):
    events = recorded(RUN)
    state = LiveRunState("replay", spec_of(events))
    for event in events:
        state.apply(event)
    calls = [e for e in events if e["type"] == "gen_call"]
    ring = state.gen_calls.array()
    drawn = ring[~(ring[:, 1] != ring[:, 1])]  # the NaN row between points is a gap, not a call
    assert len(drawn) == len(calls)
    assert list(drawn[:, 1]) == [e["ttft_ms"] for e in calls]
    assert state.status == "ok" and state.progress.fraction == 1.0
    rows = list(state.sweep.rows.values())
    assert [(r.batch_size, r.lengths) for r in rows] == [(1, (16, 8)), (2, (16, 8))]
    points = state.result["generate"]
    for row, point in zip(rows, points, strict=True):
        assert row.final and row.tpot_p50_ms == point["tpot_ms"]["p50"] and row.requests == point["calls"]
    table = SweepTable(True)
    qtbot.addWidget(table)
    table.update_from(state.sweep)
    assert table.cell_text(1, "Out") == "8" and table.cell_text(1, "Calls") == str(points[1]["calls"])
    assert table.cell_text(0, "TTFT p50 ms") == f"{points[0]['ttft_ms']['p50']:.2f}"
    assert table.cell_text(0, "Check") == "ok"
