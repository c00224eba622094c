"""Real tiny runs of issue 14's models from the window: a Hugging Face config, a user's file whose trace is
wrong, and a stored file run again after it changed on disk (real torch and transformers, the real agent)."""
from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt

from app.core.model_text import check_problem
from app.ui.models.run_state import LiveRunState
from tests.conftest import DATA

pytestmark = pytest.mark.slow

MODELS = DATA / "models"
RUN_TIMEOUT_MS = 240_000


def run_form(window, qtbot, model: str, **values):
    form = {"preset": "", "workload": "infer", "model": model, "model_args": "", "backend": "cpu",
            "precision": "fp32", "batch_sizes": "2", "warmup": 1, "min_iters": 5, "duration": 0.6, "task": "",
            "seq_lens": "", "check": True}
    form.update(values)
    window.workload.set_form_values(form)
    assert window.workload.valid, window.workload.message.text()
    qtbot.mouseClick(window.run_button, Qt.MouseButton.LeftButton)
    view = window.runs.views[-1]
    qtbot.waitUntil(lambda: view.done, timeout=RUN_TIMEOUT_MS)
    view.refresh()
    assert view.state.status == "ok", view.log.text()
    return view


def test_a_tiny_hugging_face_run_shows_tokens_per_second(make_window, qtbot):
    window = make_window()
    # No length given: the model's default, capped at the config's 64 positions, named by the host once set up.
    view = run_form(window, qtbot, f"hf:{MODELS / 'tiny-bert'}", task="classification")
    (measured,) = view.state.result["infer"]
    assert measured["seq_len"] == 64 and measured["tokens_per_s"] == pytest.approx(64 * measured["throughput_per_s"])
    # the status line: tokens/s beside samples/s (the latest window's, 64 tokens a sample)
    samples, tokens = view.state.latest_throughput(), view.state.latest_tokens_per_s()
    assert tokens == pytest.approx(64 * samples)
    assert f"{samples:,.1f} samples/s</b> · <b>{tokens:,.0f} tokens/s" in view.live_text()
    # ...and once finished, the Result's: its own throughput and tokens/s for the one artefact
    assert f"<b>{measured['throughput_per_s']:.1f} samples/s</b> · <b>{measured['tokens_per_s']:,.0f} tokens/s</b>" \
        in view.figures.text()
    # one row for the one artefact (its length learnt after setup), with the Result's figures; the check agreed
    table = view.sweep_table
    assert table.rowCount() == 1 and table.cell_text(0, "Seq") == "64"
    assert table.cell_text(0, "tokens/s") == f"{measured['tokens_per_s']:,.0f}"
    assert table.cell_text(0, "Check") == "ok" and not view.check_banner.isVisible()
    assert len(view.plot_data()["p50 b2·s64"]) > 0  # the latency series of batch 2 at length 64
    assert all(span.end is not None for span in view.state.phases)  # every phase closed, setup included
    assert "tokens/s" in view.result_text.toPlainText()


def test_a_compiled_model_that_disagrees_with_eager_is_marked_where_the_user_looks(make_window, qtbot):
    window = make_window()
    view = run_form(window, qtbot, f"file:{MODELS / 'branchy.py'}", batch_sizes="4")
    (measured,) = view.state.result["infer"]
    assert measured["check"]["agrees"] is False and measured["throughput_per_s"] > 0  # the figure is kept
    sentence = check_problem(measured["check"], "batch 4")
    assert sentence.startswith("batch 4: compiled model disagrees with eager (error ") and "% of scale)" in sentence
    assert view.check_banner.isVisible() and view.check_banner.text() == f"✗ {sentence}"
    assert view.sweep_table.cell_text(0, "Check") == "✗ WRONG"
    assert "b4</span>" in view.main.titleLabel.text and "✗ wrong" in view.main.titleLabel.text
    # the mark comes live, with the agent's warning right after the compile, before any Result
    events = [e for e in window.store.events(view.job.run_id) if e["type"] != "result"]
    live = LiveRunState(view.state.host, view.job.spec)
    for event in events:
        live.apply(event)
    assert live.result is None and live.sweep.problems()[0].startswith("batch 4: compiled model disagrees with eager")


def test_run_again_from_history_runs_the_stored_file_after_the_file_on_disk_changed(make_window, qtbot, tmp_path):
    window = make_window()
    mine = tmp_path / "tower.py"
    shutil.copy(MODELS / "two_tower.py", mine)
    first = run_form(window, qtbot, f"file:{mine}")
    stored = window.store.get_run(first.job.run_id)
    digest = stored.spec["model_file"]["sha256"]
    assert stored.spec["model_file"]["text"] == mine.read_text()  # the store keeps the file's text
    mine.write_text("raise RuntimeError('this file changed since the run')\n")  # the file on disk changes

    window.history.refresh()
    qtbot.waitUntil(lambda: not window.history.loading and window.history.model.rowCount() == 1)
    assert window.history.model.index(0, 5).data() == "file tower.py"
    window.history.select_runs([first.job.run_id])
    qtbot.mouseClick(window.history.rerun_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.runs.views and window.runs.views[-1] is not first, timeout=10_000)
    again = window.runs.views[-1]
    assert "copy of tower.py stored with the run" in window.workload.model_inputs.stored_note.text()
    qtbot.waitUntil(lambda: again.done, timeout=RUN_TIMEOUT_MS)
    again.refresh()
    assert again.state.status == "ok", again.log.text()
    assert again.job.spec.model_file["sha256"] == digest
    assert again.state.result["model"]["sha256"] == digest  # the host ran the stored text
    assert f"runs the stored copy of tower.py (sha256 {digest[:12]})" in again.heading.text()
    assert "the file on disk has changed since (now sha256" in again.log.text()
    # an edit of the model field goes back to the file on disk
    window.workload.model.name.setText(str(mine) + " ")
    assert not window.workload.model_inputs.stored_note.isVisible()
    assert window.workload.spec().model_file["sha256"] != digest
