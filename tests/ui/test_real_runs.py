"""Real tiny runs on this computer from the desktop app: real torch, the real agent zipapp, LocalTransport."""
from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.core.presets import TINY_VIT_ARGS
from remote_agent.rundir import RunDir
from tests.ui.conftest import open_settings

pytestmark = pytest.mark.slow

TINY_ARGS = " ".join(f"{k}={v}" for k, v in TINY_VIT_ARGS.items())
RUN_TIMEOUT_MS = 240_000


def tiny_training(window, steps: int, **changes) -> None:
    form = {"preset": "", "workload": "train", "model": "vit_tiny_patch16_224", "model_args": TINY_ARGS,
            "backend": "cpu", "precision": "fp32", "batch_sizes": "4", "steps": steps, "warmup": 2, "workers": 0,
            "nproc": 1}
    form.update(changes)
    window.workload.set_form_values(form)
    assert window.workload.valid, window.workload.message.text()


def click(qtbot, button) -> None:
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def events_on_disk(app_paths, run_id: str) -> list[dict]:
    run_dir = RunDir(str(app_paths.local_agent_home / "runs" / run_id))
    try:
        with open(run_dir.events) as handle:
            return [json.loads(line) for line in handle if line.strip()]
    except FileNotFoundError:
        return []


def test_a_tiny_training_from_the_run_button_fills_the_charts_and_finishes(make_window, qtbot):
    window = make_window()
    tiny_training(window, steps=12)
    click(qtbot, window.run_button)
    (view,) = window.runs.views
    assert not window.run_button.isEnabled() and window.cancel_button.isEnabled()
    assert window.status_label.text() == "1 run(s) going"
    # the charts hold data while it runs...
    qtbot.waitUntil(lambda: len(view.plot_data()["step_time"]) > 0, timeout=RUN_TIMEOUT_MS)
    # ...and it finishes
    qtbot.waitUntil(lambda: not window.runs.active_views(), timeout=RUN_TIMEOUT_MS)
    view.refresh()
    assert view.state.status == "ok" and view.activity.text() == "finished"
    assert window.status_label.text() == "Finished: ok"
    data = view.plot_data()
    assert len(data["step_time"]) == 12 and (data["step_time"] > 0).all()
    assert len(data["throughput"]) == 12 and data["throughput"][-1] > 0
    assert view.progress.value() == 1000 and view.eta.text() == ""
    assert "step 12/12" in view.live_text()
    result = view.state.result
    assert result["status"] == "ok" and result["host"] == "local"
    assert f"{result['train']['throughput_samples_per_s']:.2f} samples/s" in view.result_text.toPlainText()
    # the status line quotes the Result now: its steady window's median, as the summary does
    assert f"step time median <b>{result['train']['step_time_s']['median']:.4f} s</b>" in view.figures.text()
    assert "run ok" in view.log.text()
    assert window.errors.entries == []
    stored = window.store.get_run(view.job.run_id)  # recorded as it streamed, priced when it ended
    assert stored.status == "ok" and stored.result["train"] == result["train"]
    assert window.store.event_count(view.job.run_id) == len(events_on_disk(window.paths, view.job.run_id))
    assert window.unfinished_runs() == []  # it ended here: nothing to re-attach
    assert window.run_button.isEnabled()


def test_an_unknown_model_shows_the_engine_sentence_in_the_error_panel(make_window, qtbot):
    window = make_window()
    tiny_training(window, steps=6, model="vit_tinny_patch16_224")
    click(qtbot, window.run_button)
    qtbot.waitUntil(lambda: bool(window.errors.entries), timeout=RUN_TIMEOUT_MS)
    entry = window.errors.entries[0]
    assert entry.title.text() == "<b>This computer: the run failed</b>"
    assert entry.message.text().startswith("unknown model 'vit_tinny_patch16_224' (timm ")
    assert "did you mean vit_tiny_patch16_224" in entry.message.text()
    (view,) = window.runs.views
    qtbot.waitUntil(lambda: view.state.finished, timeout=10_000)
    view.refresh()
    # every event received stays in the view: the host's probe, the phases, the log
    assert view.state.status == "failed" and view.state.env["torch"].startswith("2.")
    assert "unknown model" in view.log.text()
    assert "status failed" not in view.result_text.toPlainText() and "· failed" in view.result_text.toPlainText()
    assert window.status_label.text() == "Finished: failed"


def test_cancel_stops_the_run_on_its_host(make_window, qtbot, app_paths):
    window = make_window()
    tiny_training(window, steps=100_000)
    click(qtbot, window.run_button)
    (view,) = window.runs.views
    qtbot.waitUntil(lambda: len(view.plot_data()["step_time"]) > 0, timeout=RUN_TIMEOUT_MS)
    qtbot.keyClick(window, Qt.Key.Key_Escape)  # the shortcut, as a user would
    qtbot.waitUntil(lambda: view.state.finished, timeout=60_000)
    assert view.state.status == "cancelled" and view.state.result["status"] == "cancelled"
    assert window.errors.entries == []
    on_disk = events_on_disk(app_paths, view.job.run_id)
    assert on_disk[-1]["type"] == "end" and on_disk[-1]["status"] == "cancelled"


def test_closing_during_a_run_asks_and_the_run_goes_on(make_window, qtbot, app_paths, settings_file):
    window = make_window()
    tiny_training(window, steps=100_000)
    click(qtbot, window.run_button)
    (view,) = window.runs.views
    run_id = view.job.run_id
    qtbot.waitUntil(lambda: len(view.plot_data()["step_time"]) > 0, timeout=RUN_TIMEOUT_MS)

    window.close()
    qtbot.waitUntil(lambda: window.close_question is not None and window.close_question.isVisible())
    assert window.isVisible()
    box = window.close_question
    assert "1 run(s) are still going (This computer)" in box.text()
    keep = next(b for b in box.buttons() if box.buttonRole(b) == QMessageBox.ButtonRole.RejectRole)
    click(qtbot, keep)
    qtbot.waitUntil(lambda: window.close_question is None)
    assert window.isVisible() and not view.state.finished  # still here, still running

    window.close()
    qtbot.waitUntil(lambda: window.close_question is not None and window.close_question.isVisible())
    leave = next(b for b in window.close_question.buttons()
                 if window.close_question.buttonRole(b) == QMessageBox.ButtonRole.AcceptRole)
    click(qtbot, leave)
    qtbot.waitUntil(lambda: not window.isVisible())
    assert view.state.status == "detached"
    assert window.store.get_run(run_id).status == "unfinished"  # nothing lost: what came is stored
    stored_before = window.store.event_count(run_id)
    assert stored_before > 0

    # The run goes on without the app: its supervisor keeps writing events...
    qtbot.waitUntil(lambda: len(events_on_disk(app_paths, run_id)) > stored_before + 5, timeout=60_000)

    # ...and the next start offers to re-attach it.
    reopened = make_window(settings=open_settings(settings_file))
    banner = reopened.reattach_banner
    assert banner.isVisible() and f"{run_id} on local" in banner.text.text()
    click(qtbot, banner.reattach_button)
    assert not banner.isVisible()
    (again,) = reopened.runs.views
    assert again.job.run_id == run_id and again.job.attached
    qtbot.waitUntil(lambda: len(again.plot_data()["step_time"]) > len(view.plot_data()["step_time"]),
                    timeout=RUN_TIMEOUT_MS)  # the steps done while nobody watched are drawn too
    qtbot.keyClick(reopened, Qt.Key.Key_Escape)  # and it can be cancelled from here
    qtbot.waitUntil(lambda: again.state.finished, timeout=60_000)
    assert again.state.status == "cancelled"
    on_disk = events_on_disk(app_paths, run_id)
    assert on_disk[-1]["type"] == "end" and on_disk[-1]["status"] == "cancelled"
    # every event the host wrote is in the store once, the end included
    assert [e["seq"] for e in reopened.store.events(run_id)] == [e["seq"] for e in on_disk]
    assert reopened.store.get_run(run_id).status == "cancelled"
    assert reopened.unfinished_runs() == []
