"""The workload form: a new user can run at once; mistakes are caught as you type, in the engine's words."""
from __future__ import annotations

import hashlib
from types import SimpleNamespace

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from app.core.presets import PRESETS
from app.ui import theme
from remote_agent.protocol import RunSpec


def test_a_new_user_can_click_run_at_once(make_window):
    window = make_window()
    assert [h.name for h in window.sidebar.checked()] == ["local"]
    assert window.sidebar.item(0).text().startswith("This computer")
    assert window.workload.preset.currentData() == "quickstart"
    assert window.run_button.isEnabled() and window.run_button.text() == "Run on this computer"
    assert not window.cancel_button.isEnabled()
    assert window.workload.spec() == PRESETS["quickstart"].spec


def test_a_bad_batch_size_is_refused_as_you_type_and_run_disables(make_window, qtbot):
    window = make_window()
    form = window.workload
    form.batch_sizes.clear()
    qtbot.keyClicks(form.batch_sizes, "8x")
    assert form.message.isVisible()
    assert form.message.text() == "--batch-sizes '8x': '8x' is not a whole number"
    assert not window.run_button.isEnabled() and not window.run_action.isEnabled()
    qtbot.keyClick(form.batch_sizes, Qt.Key.Key_Backspace)
    assert not form.message.isVisible()
    assert window.run_button.isEnabled()
    assert form.spec().batch_sizes == (8,)


def test_steps_not_above_warmup_shows_the_engine_sentence_and_marks_the_field(make_window, qtbot):
    window = make_window()
    form = window.workload
    form.warmup.selectAll()
    qtbot.keyClicks(form.warmup.lineEdit(), "40")
    assert form.message.text() == "--steps (30) must be greater than --warmup (40): no step would be measured"
    assert form.error_field == "steps"
    marked = form.labels["steps"].palette().color(QPalette.ColorRole.WindowText)
    assert marked == theme.error_text_colour(form.palette())
    assert form.labels["warmup"].palette().color(QPalette.ColorRole.WindowText) != marked
    assert not window.run_button.isEnabled()
    assert form.preset.currentText() == "Custom"  # an edited preset is no longer that preset


def test_training_takes_one_batch_size_and_inference_sweeps(make_window, qtbot):
    window = make_window()
    form = window.workload
    form.batch_sizes.setText("1,4")
    assert "training takes one batch size per run" in form.message.text()
    form.workload.setCurrentIndex(form.workload.findData("infer"))
    assert form.spec() is not None and form.spec().workload == "infer"
    assert not form.form.isRowVisible(form.steps) and form.form.isRowVisible(form.duration)
    form.workload.setCurrentIndex(form.workload.findData("train"))
    assert form.batch_sizes.text() == "1,4"  # what was typed for training comes back
    form.workload.setCurrentIndex(form.workload.findData("infer"))
    assert form.batch_sizes.text() == "1,4,16"  # inference keeps its own sweep


def test_a_bad_model_name_and_model_args_are_refused(make_window):
    form = make_window().workload
    form.model.setText("vit base")
    assert "is not a timm model name" in form.message.text() and form.error_field == "model"
    form.model.setText("vit_base_patch16_224")
    form.model_args.setText("img_size")
    assert form.message.text() == "--model-arg 'img_size' is not KEY=VALUE (e.g. --model-arg img_size=32)"
    form.model_args.setText("img_size=32 depth=2")
    assert form.spec().model_args == {"img_size": 32, "depth": 2}


def test_presets_fill_the_form_and_tooltips_come_from_the_field_help(make_window):
    form = make_window().workload
    form.preset.setCurrentIndex(form.preset.findData("tiny-train"))
    tiny = PRESETS["tiny-train"].spec
    assert form.spec() == tiny
    assert form.model_args.text() == "img_size=32 patch_size=8 depth=2 embed_dim=64 num_heads=2"
    help_ = RunSpec.field_help()
    assert help_["steps"]["help"] in form.steps.toolTip() and "--steps" in form.steps.toolTip()
    assert help_["batch_sizes"]["help"] in form.labels["batch_sizes"].toolTip()


def test_unticking_every_host_disables_run_and_says_why(make_window):
    window = make_window()
    window.sidebar.set_checked("local", False)
    assert not window.run_button.isEnabled()
    assert window.run_button.text() == "Tick a host to run on"


def test_loader_workers_default_to_auto_and_the_data_source_is_chosen_in_the_form(make_window):
    form = make_window().workload
    form.workload.setCurrentIndex(form.workload.findData("train"))
    assert form.workers.text() == "auto (from the host's vCPUs)" and form.spec().workers is None
    form.data.setCurrentIndex(form.data.findData("device"))
    assert form.spec().data == "device"
    form.workers.setValue(3)
    assert form.spec().workers == 3
    form.workload.setCurrentIndex(form.workload.findData("infer"))
    assert not form.form.isRowVisible(form.data) and not form.form.isRowVisible(form.workers)


class H100Provider:
    """`local` answering its probe as the one-GPU H100 host did (a real recording), prices unknown."""

    def __init__(self, events):
        self.events = events

    def hosts(self):
        from app.core.hosts import LOCAL

        return [LOCAL]

    def transport_for(self, host):
        from app.services.replay import ReplayTransport

        return ReplayTransport(lambda: iter(self.events), host.name)

    def price(self, host, instance_type, region=None):
        return None


def test_more_processes_than_the_probed_gpus_are_refused_as_you_type(make_window, qtbot):
    from tests.ui.conftest import recorded

    window = make_window(provider=H100Provider(recorded("h100-train-nproc2-on-1-gpu-failed.events.jsonl")),
                         probe_hosts=True)
    form = window.workload
    qtbot.waitUntil(lambda: window.sidebar.rows["local"].env is not None)
    form.backend.setCurrentText("cuda")
    assert form.valid
    form.nproc.setValue(2)
    assert form.message.text() == ("This computer: --nproc 2 but this host has 1 GPU: run with --nproc 1 or fewer "
                                   "(one training process per GPU)")
    assert form.error_field == "nproc" and not window.run_button.isEnabled()
    window.sidebar.set_checked("local", False)  # a host that is not ticked does not hold the form back
    assert form.valid
    window.sidebar.set_checked("local", True)
    assert not form.valid
    form.nproc.setValue(1)
    assert form.valid and window.run_button.isEnabled()


def test_model_args_nested_past_what_a_run_carries_are_a_sentence_under_the_field(make_window):
    form = make_window().workload
    form.model_args.setText("k=" + "[" * 3000)  # json's reader gives up (RecursionError) before the end
    assert form.message.text() == "--model-arg 'k' nests deeper than the 28 levels a run's events can carry"
    assert form.error_field == "model_args" and not form.valid
    form.model_args.setText("k=" + "[" * 40 + "]" * 40)  # read, then refused by the spec's own limit
    assert "nests deeper than the 28 levels" in form.message.text() and form.error_field == "model_args"
    form.model_args.setText("k=" + "[" * 28 + "]" * 28)
    assert form.valid and form.spec().model_args["k"] is not None


def test_a_stored_model_file_name_is_shown_escaped_short_and_as_plain_text(make_window):
    text = "def build(batch_size):\n    pass\n"
    name = "\x1b[2J<b>tower</b>\x07\r\n" + "x" * 5_000 + ".py"  # the name the run was stored with, as it came
    # RunSpec refuses such a name today; the note must not rely on every caller having checked it.
    spec = SimpleNamespace(model="file:/models/tower.py",
                           model_file={"name": name, "sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text})
    inputs = make_window().workload.model_inputs
    inputs.keep_stored(spec)
    note = inputs.stored_note
    assert note.textFormat() == Qt.TextFormat.PlainText  # "<b>" is the name's text, not markup
    for shown in (note.text(), note.toolTip()):
        assert not any(c in shown for c in "\x1b\x07\r\n") and len(shown) < 600, shown[:80]
    assert "copy of \\x1b[2J<b>tower</b>\\x07\\r\\nxxx" in note.text()
