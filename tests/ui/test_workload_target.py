"""The workload form's "Measure: until ±PCT %" (--target-ci): off by default, checked as you type, remembered."""
from __future__ import annotations

from PySide6.QtGui import QPalette

from app.ui import theme


def test_measure_until_a_target_is_in_the_spec_and_checked_against_the_steps(make_window, qtbot):
    window = make_window()
    form = window.workload
    assert form.target_ci.text() == "fixed steps / duration" and form.spec().target_ci is None
    form.steps.setValue(500)
    form.target_ci.selectAll()
    qtbot.keyClicks(form.target_ci.lineEdit(), "2")
    assert form.target_ci.value() == 2.0 and form.spec().target_ci == 2.0
    assert form.labels["target_ci"].text() == "Measure" and "--target-ci" in form.target_ci.toolTip()

    # The quick-start's 30 steps leave 25 after warm-up: too few for a stop to rest on.
    form.steps.setValue(30)
    assert form.message.text() == ("--target-ci 2: --steps (30) leaves 25 after --warmup (5), and a stop rests on "
                                   "at least 30 steady steps; raise steps, the most it may run")
    assert form.labels["target_ci"].palette().color(QPalette.ColorRole.WindowText) == \
        theme.error_text_colour(form.palette())
    assert not window.run_button.isEnabled()
    form.steps.setValue(500)
    assert window.run_button.isEnabled() and form.spec().steps == 500

    # What the app remembers brings the target back, and inference keeps it (with --duration the cap).
    values = form.form_values()
    assert values["target_ci"] == 2.0
    form.set_form_values(dict(values, target_ci=0.0))
    assert form.spec().target_ci is None
    form.set_form_values(dict(values, workload="infer", batch_sizes="1,4"))
    assert form.spec().workload == "infer" and form.spec().target_ci == 2.0
