"""History lists what the store holds without a Refresh: at start, when shown, and runs the CLI records meanwhile."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.services.pricing import load_pricebook
from app.services.recorder import RunRecorder
from app.services.store import RunStore
from app.ui.models.runs_table import COLUMNS
from tests.helpers import tiny_model_flags
from tests.ui.conftest import recorded

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def history_tab(window) -> int:
    return next(i for i in range(window.tabs.count()) if window.tabs.tabText(i) == "History")


def statuses(view) -> list[str]:
    return [view.proxy.index(row, COLUMNS.index("Status")).data() for row in range(view.proxy.rowCount())]


def record(paths, name: str, host: str, run_id: str, instance_type: str) -> None:
    """Store a recorded real run as ``neuronbench run`` stores it (every event, then the priced Result)."""
    events = recorded(name)
    result = next(e for e in events if e["type"] == "result")["result"]
    with RunStore(paths.runs_db) as store:
        recorder = RunRecorder.start(store, load_pricebook(paths), host, result["spec"], run_id,
                                     declared_type=instance_type, declared_region="us-east-1")
        for event in events:
            recorder(event)
        recorder.finish(dict(result, run_id=run_id, host=host))


def test_runs_stored_before_the_app_opened_are_listed_at_once(make_window, qtbot, app_paths):
    # Yesterday's store: three real runs (recorded streams), stored as the CLI stores them.
    record(app_paths, "train-cpu-tiny.events.jsonl", "trn1-box", "20261123-080000-aaaaaa", "trn1.2xlarge")
    record(app_paths, "train-xla-tiny.events.jsonl", "trn1-box", "20261123-090000-bbbbbb", "trn1.2xlarge")
    record(app_paths, "infer-cpu-tiny.events.jsonl", "inf2-box", "20261123-100000-cccccc", "inf2.xlarge")
    window = make_window()
    history = window.history
    # Nobody clicks Refresh, nor even opens the tab: the store was read when the app started.
    qtbot.waitUntil(lambda: history.model.rowCount() == 3, timeout=15_000)
    assert history.count.text() == "3 runs" and statuses(history) == ["ok", "ok", "ok"]
    window.tabs.setCurrentIndex(history_tab(window))
    assert history.model.rowCount() == 3


def test_switching_to_history_reads_what_was_recorded_while_it_was_hidden(make_window, qtbot, app_paths):
    window = make_window()
    history = window.history
    qtbot.waitUntil(lambda: not history.loading, timeout=15_000)
    assert history.count.text() == "0 runs" and not history.isVisible()
    with RunStore(app_paths.runs_db) as store:  # another writer, as a CLI process is
        store.begin_run("20261124-090000-c0ffee", "gpu-box", {"workload": "train"})
        store.finish_run("20261124-090000-c0ffee", {"status": "failed", "run_id": "20261124-090000-c0ffee"})
    window.tabs.setCurrentIndex(history_tab(window))
    qtbot.waitUntil(lambda: history.model.rowCount() == 1, timeout=15_000)
    assert history.count.text() == "1 run" and statuses(history) == ["failed"]


def test_a_run_the_cli_records_while_history_is_open_appears_and_ends_there(make_window, qtbot, cli_env):
    window = make_window()
    history = window.history
    window.tabs.setCurrentIndex(history_tab(window))
    qtbot.waitUntil(lambda: not history.loading, timeout=15_000)
    assert history.count.text() == "0 runs"
    cli = subprocess.Popen([sys.executable, "-m", "app", "run", "--host", "local", "--workload", "train",
                            *tiny_model_flags(), "--backend", "cpu", "--batch-size", "4", "--workers", "0",
                            "--steps", "4", "--warmup", "1"], cwd=REPO, env=cli_env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        qtbot.waitUntil(lambda: statuses(history) == ["ok"], timeout=240_000)
    finally:
        _, stderr = cli.communicate(timeout=240)
    assert cli.returncode == 0, stderr[-2000:]
    assert history.count.text() == "1 run"
    row = history.proxy.index(0, COLUMNS.index("Result")).data()
    assert row.endswith("samples/s"), row
