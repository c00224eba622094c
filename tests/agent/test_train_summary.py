"""The steady window of DESIGN.md §5, on hand-made step sequences."""
from __future__ import annotations

import pytest

from remote_agent.summary import summarize_train


def steps(times, compiled=(), samples=8):
    return [{"i": i, "dt_s": dt, "samples": samples, "compiled": i in compiled, "data_s": 0.0}
            for i, dt in enumerate(times, start=1)]


WORKER = {"world_size": 1, "global_batch": 8, "compile_seconds": 5.5, "compile_count": 2}


def test_compiled_steps_are_listed_and_kept_out_of_the_window():
    warnings: list[str] = []
    train = summarize_train(steps([3.0, 2.9, 0.1, 0.1, 0.1, 0.1], compiled={1, 2}), 1, WORKER, warnings)
    assert train["compile"]["steps"] == [1, 2]
    assert train["compile"]["seconds"] == 5.5
    assert train["window"] == [3, 6] and train["steps_measured"] == 4
    assert train["throughput_samples_per_s"] == pytest.approx(8 * 4 / 0.4)
    assert train["step_time_s"]["median"] == pytest.approx(0.1)
    assert warnings == ["step(s) 2 compiled after the 1 warm-up steps (a recompilation): the steady window starts "
                        "after step 2"]


def test_warmup_without_compiles_is_skipped_too():
    train = summarize_train(steps([1.0, 0.5, 0.2, 0.2, 0.2]), 2, WORKER, [])
    assert train["window"] == [3, 5]
    assert train["throughput_samples_per_s"] == pytest.approx(8 * 3 / 0.6)


def test_throughput_is_global_samples_over_window_wall_time():
    train = summarize_train(steps([0.5, 0.1, 0.3], samples=32), 1, WORKER, [])
    assert train["throughput_samples_per_s"] == pytest.approx(64 / 0.4)


def test_slow_steps_are_reported_never_dropped():
    warnings: list[str] = []
    times = [0.1] * 20 + [1.5]
    train = summarize_train(steps(times), 0, WORKER, warnings)
    assert train["steps_measured"] == 21
    assert train["throughput_samples_per_s"] == pytest.approx(8 * 21 / 3.5)
    assert any("1 measured step(s) lie beyond" in w for w in warnings)


def test_a_run_where_every_step_compiled_has_no_throughput():
    warnings: list[str] = []
    train = summarize_train(steps([1.0, 1.0], compiled={1, 2}), 1, WORKER, warnings)
    assert train["throughput_samples_per_s"] is None and train["steps_measured"] == 0
    assert any("no steady step" in w for w in warnings)
