"""The workload form's Neuron controls, run end to end on the Neuron stand-ins (issue 28 part 1).

This computer is dressed as a trn2.3xlarge with TorchNeuron (the suite's torch 2.13 venv and the native stand-in,
tests/e2e/test_neuron_native.py) and then as an inf2.xlarge with the XLA stack (torch_neuronx.trace's stand-in):
the form shows each host's stack from its probe and where the compiler flags go, runs a native eager inference
and a cold-compile traced run with flags from the Run button, and History and Compare show each run's choices.
"""
from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import Qt

from app.ui.models.runs_table import COLUMNS
from tests.conftest import DATA
from tests.e2e.test_neuron_native import NATIVE_STAND_INS, XLA_STAND_INS, neuron_env
from tests.native_venv import native_python

pytestmark = pytest.mark.slow
RUN_MS = 300_000
FORM = {"preset": "", "workload": "infer", "model": f"file:{DATA / 'models' / 'two_tower.py'}", "model_args": "",
        "backend": "neuron", "precision": "fp32", "batch_sizes": "2", "warmup": 1, "min_iters": 10, "duration": 0.1,
        "nproc": 1}


def dress(monkeypatch, env: dict[str, str]) -> None:
    """This process's environment becomes the host's: LocalTransport hands it to the agent it starts."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def probed(qtbot, window, stack: str) -> None:
    window.hosts.probe_hosts()
    qtbot.waitUntil(lambda: (window.sidebar.rows["local"].env or {}).get("neuron_stack") == stack, timeout=RUN_MS)


def run_once(qtbot, window) -> dict:
    assert window.workload.valid, window.workload.message.text()
    qtbot.mouseClick(window.run_button, Qt.MouseButton.LeftButton)
    view = window.runs.views[-1]
    qtbot.waitUntil(lambda: view.state.finished and view.done, timeout=RUN_MS)
    assert view.state.status == "ok", view.log.text()[-2000:]
    return view.state.result


def test_the_form_runs_native_eager_and_a_cold_traced_run_and_history_shows_the_choices(
        make_window, qtbot, monkeypatch, cli_env, tmp_path):
    native, why = native_python()
    if native is None:
        pytest.skip(why)
    dress(monkeypatch, neuron_env(cli_env, tmp_path, "neuron-ls-trn2-3xlarge.json", NATIVE_STAND_INS, native))
    window = make_window(probe_hosts=True)
    form = window.workload
    probed(qtbot, window, "native")
    form.set_form_values(dict(FORM, neuron_mode="eager"))
    # the host's stack from its probe, and where flags would go on it
    note = form.neuron.note.text()
    assert form.neuron.note.isVisible() and "This computer: native (torch-neuronx 2.13.3.0+testdouble" in note
    assert "4 logical cores (LNC 2)" in note and "Compiler flags reach NEURON_CC_FLAGS" in note
    assert form.form.isRowVisible(form.neuron.mode) and form.spec().neuron_mode == "eager"
    eager = run_once(qtbot, window)
    assert eager["backend_detail"]["stack"] == "native" and eager["backend_detail"]["mode"] == "eager"

    # the same computer as an inf2.xlarge: the XLA stack, where trace takes the flags as compiler_args
    dress(monkeypatch, neuron_env(cli_env, tmp_path, "neuron-ls-inf2-xlarge.json", XLA_STAND_INS, sys.executable,
                                  name="inf2"))
    probed(qtbot, window, "xla")
    form.set_form_values(dict(FORM, neuron_mode="compile", neuron_cc_flags="--auto-cast=none", cold_compile=True))
    assert "This computer: xla" in form.neuron.note.text()
    assert "Compiler flags reach torch_neuronx.trace compiler_args" in form.neuron.note.text()
    assert not form.form.isRowVisible(form.neuron.mode)  # eager or compile is the native stack's choice
    spec = form.spec()
    assert spec.neuron_cc_flags == "--auto-cast=none" and spec.compile_cache_reuse is False
    traced = run_once(qtbot, window)
    detail = traced["backend_detail"]
    assert detail["stack"] == "xla" and detail["compiler_flags_via"] == "compiler_args"
    assert traced["infer"][0]["compile"]["state"] == "cold"
    heading = window.runs.views[-1].heading.text()  # said before the run: the host picks the stack
    assert heading.endswith("Neuron: flags --auto-cast=none (torch_neuronx.trace compiler_args (xla stack) or "
                            "NEURON_CC_FLAGS (native stack)), cold compile")

    # History: each run's choices in its backend cell
    window.tabs.setCurrentIndex(next(i for i in range(window.tabs.count()) if window.tabs.tabText(i) == "History"))
    model = window.history.model
    qtbot.waitUntil(lambda: model.rowCount() == 2, timeout=30_000)
    backend = {model.runs[r].run_id: model.data(model.index(r, COLUMNS.index("Backend"))) for r in range(2)}
    assert backend[eager["run_id"]] == "neuron (native, eager)"
    assert backend[traced["run_id"]] == ("neuron (xla, flags --auto-cast=none (torch_neuronx.trace compiler_args), "
                                         "cold compile)")
    # Compare: the stack cell says them too
    window.show_comparison([eager["run_id"], traced["run_id"]])
    compare = window.compare
    qtbot.waitUntil(lambda: compare.table.rowCount() == 2, timeout=30_000)
    stack = compare.table.horizontalHeader().model()
    column = next(c for c in range(compare.table.columnCount()) if stack.headerData(c, Qt.Orientation.Horizontal)
                  == "Stack")
    cells = sorted(compare.table.item(r, column).text() for r in range(2))
    assert cells[0].startswith("native") and cells[0].endswith(" · eager"), cells
    assert cells[1] == "xla, cold · flags --auto-cast=none (torch_neuronx.trace compiler_args), cold compile"
