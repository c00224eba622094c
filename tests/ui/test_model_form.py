"""The workload form's model rows (issue 14): any source, its file, task, sequence lengths, the check.

No run here: these check that the form builds exactly the spec ``neuronbench run`` builds from the same
choices (the model file read and attached the CLI's way), and that a bad path gets the engine's sentence.
"""
from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette

from app.cli import build_parser
from app.cli.run_cmd import spec_from_args
from app.ui import theme
from remote_agent.protocol import RunSpec
from tests.conftest import DATA
from tests.ui.conftest import open_settings

MODELS = DATA / "models"


def cli_spec(*args: str):
    return spec_from_args(build_parser().parse_args(["run", "--host", "local", *args]))


def pick(form, source: str, name: str) -> None:
    form.model.source.setCurrentIndex(form.model.source.findData(source))
    form.model.name.setText(name)


CASES = {
    "timm": (("train", "timm", "vit_tiny_patch16_224", "img_size=32 depth=2", "", "", "8"),
             ["--workload", "train", "--model", "vit_tiny_patch16_224", "--model-arg", "img_size=32",
              "--model-arg", "depth=2", "--batch-size", "8"]),
    "torchvision": (("infer", "torchvision", "resnet18", "num_classes=10", "", "", "1,4"),
                    ["--workload", "infer", "--model", "torchvision:resnet18", "--model-arg", "num_classes=10",
                     "--batch-sizes", "1,4"]),
    "hf local folder": (("infer", "hf", str(MODELS / "tiny-bert"), "", "classification", "16,32", "1,4"),
                        ["--workload", "infer", "--model", f"hf:{MODELS / 'tiny-bert'}", "--task", "classification",
                         "--seq-lens", "16,32", "--batch-sizes", "1,4"]),
    "hf shipped hub id": (("train", "hf", "gpt2", "num_hidden_layers=2", "causal-lm", "64", "2"),
                          ["--workload", "train", "--model", "hf:gpt2", "--model-arg", "num_hidden_layers=2",
                           "--task", "causal-lm", "--seq-len", "64", "--batch-size", "2"]),
    "your file": (("train", "file", f"{MODELS / 'two_tower.py'}:build", "hidden=16", "", "", "4"),
                  ["--workload", "train", "--model", f"file:{MODELS / 'two_tower.py'}:build", "--model-arg",
                   "hidden=16", "--batch-size", "4"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_form_builds_the_clis_spec_for_each_model_source(make_window, case):
    (workload, source, name, args, task, lengths, sizes), argv = CASES[case]
    window = make_window()
    form = window.workload
    form.workload.setCurrentIndex(form.workload.findData(workload))
    pick(form, source, name)
    form.model_args.setText(args)
    form.task.setCurrentIndex(form.task.findData(task))
    form.seq_lens.setText(lengths)
    form.batch_sizes.setText(sizes)
    assert form.valid, form.message.text()
    assert form.task.isEnabled() == (source == "hf")
    assert form.seq_lens.isEnabled() == (source in ("hf", "file"))
    built = form.spec_to_run()
    assert built == cli_spec(*argv, "--steps", str(form.steps.value()), "--warmup", str(form.warmup.value()),
                             "--duration", str(form.duration.value()), "--min-iters", str(form.min_iters.value()))
    if source in ("hf", "file"):  # the file the model brings travels in the spec, read here
        assert built.model_file["text"] and len(built.model_file["sha256"]) == 64
    assert window.run_button.isEnabled()


def test_no_check_and_presets_fill_every_model_field(make_window):
    form = make_window().workload
    form.preset.setCurrentIndex(form.preset.findData("seed-infer-bert-large"))
    assert form.model.current_source() == "hf" and form.model.name.text() == "bert-large-uncased"
    assert form.task.currentData() == "classification" and form.seq_lens.text() == "128"
    assert form.spec() == cli_spec("--preset", "seed-infer-bert-large")
    form.check.setChecked(False)
    assert form.spec() == cli_spec("--preset", "seed-infer-bert-large", "--no-check")
    assert form.preset.currentText() == "Custom"
    form.preset.setCurrentIndex(form.preset.findData("tiny-train"))  # back to an image model: no task, no length
    assert form.model.current_source() == "timm" and not form.task.isEnabled() and not form.seq_lens.isEnabled()
    assert form.check.isChecked() and form.spec().seq_lens == () and form.spec().task == ""


def test_a_missing_file_or_a_folder_without_config_is_refused_in_the_engines_words(make_window, qtbot, tmp_path):
    window = make_window()
    form = window.workload
    form.model.source.setCurrentIndex(form.model.source.findData("file"))
    assert form.message.text() == "choose your model's .py file (Browse…), or type its path"
    assert not window.run_button.isEnabled()
    missing = tmp_path / "net.py"
    qtbot.keyClicks(form.model.name, str(missing))
    assert form.message.text() == f"model file {str(missing)!r} does not exist (looked at {str(missing)!r})"
    assert form.error_field == "model" and not window.run_button.isEnabled()
    marked = form.labels["model"].palette().color(QPalette.ColorRole.WindowText)
    assert marked == theme.error_text_colour(form.palette())
    shutil.copy(MODELS / "two_tower.py", missing)  # the file appears: the next check finds it
    qtbot.keyClick(form.model.name, Qt.Key.Key_End)
    form.model_args.setText("hidden=8")
    assert form.valid and window.run_button.isEnabled()
    big = tmp_path / "weights_inside.py"
    big.write_text("W = [" + "0.0, " * 120_000 + "]\n")  # 600 KiB: a file that carries weights, not a definition
    form.model.name.setText(str(big))
    assert form.message.text() == (f"model file {str(big)!r} is {big.stat().st_size // 1024} KiB, over the 512 KiB a "
                                   "model file may have: a model file defines the model, its weights are random")
    assert not window.run_button.isEnabled()

    form.model.source.setCurrentIndex(form.model.source.findData("hf"))
    form.model.name.setText(str(tmp_path))
    assert form.message.text() == (f"'hf:{tmp_path}' is a folder without config.json: give the folder a Hugging Face "
                                   "model was saved to, or the config.json itself")
    assert not window.run_button.isEnabled()
    form.model.name.setText(str(MODELS / "tiny-bert"))
    form.seq_lens.setText("128")  # past the config's 64 positions: the config settles it before any run
    assert form.message.text() == f"--seq-len 128 is past {MODELS / 'tiny-bert'}'s maximum of 64 positions " \
                                  "(max_position_embeddings)"
    assert form.error_field == "seq_lens" and not window.run_button.isEnabled()
    form.seq_lens.setText("64")
    assert form.valid


def test_a_pasted_reference_picks_its_source_and_each_source_keeps_its_own_name(make_window, qtbot):
    form = make_window().workload
    form.model.source.setCurrentIndex(form.model.source.findData("hf"))
    assert form.model.text() == "hf:bert-large-uncased" and form.valid  # a first pick that runs (shipped config)
    assert "gpt2" in form.model.names() and "bert-large-uncased" in form.model.names()  # the shipped configs
    form.model.name.selectAll()
    qtbot.keyClicks(form.model.name, "torchvision:resnet18")  # a pasted reference: its source is picked
    assert form.model.current_source() == "torchvision" and form.model.name.text() == "resnet18"
    assert form.model.text() == "torchvision:resnet18" and not form.task.isEnabled() and form.valid
    form.model.source.setCurrentIndex(form.model.source.findData("timm"))
    assert form.model.text() == "vit_tiny_patch16_224"  # the quick-start preset's, as it was
    form.model.source.setCurrentIndex(form.model.source.findData("torchvision"))
    assert form.model.text() == "torchvision:resnet18"
    assert "def build(" not in form.model.name.toolTip()
    form.model.source.setCurrentIndex(form.model.source.findData("file"))
    tip = form.model.name.toolTip()
    assert "def build(batch_size, **model_args)" in tip and "'tokens_per_sample': optional" in tip  # the contract
    assert RunSpec.field_help()["model"]["help"] in tip and "(CLI: --model)" in tip  # the spec's own help


def test_the_model_rows_survive_a_restart(make_window, settings_file):
    first = make_window(settings=open_settings(settings_file))
    form = first.workload
    form.workload.setCurrentIndex(form.workload.findData("infer"))
    pick(form, "hf", str(MODELS / "tiny-bert"))
    form.task.setCurrentIndex(form.task.findData("masked-lm"))
    form.seq_lens.setText("16,32")
    form.check.setChecked(False)
    built = form.spec()
    first.close()
    form = make_window(settings=open_settings(settings_file)).workload
    assert form.model.current_source() == "hf" and form.task.currentData() == "masked-lm"
    assert form.seq_lens.text() == "16,32" and not form.check.isChecked()
    assert form.spec() == built


def test_the_file_chooser_fills_the_field(make_window, qtbot):
    form = make_window().workload
    form.model.source.setCurrentIndex(form.model.source.findData("file"))
    dialog = form.model.choose_file()
    assert dialog is not None and dialog.isVisible()
    dialog.fileSelected.emit(str(MODELS / "branchy.py"))
    dialog.reject()
    qtbot.waitUntil(lambda: form.model.dialog is None)
    assert form.model.text() == f"file:{MODELS / 'branchy.py'}" and form.valid


def test_run_reads_the_file_as_it_is_when_run_is_pressed(make_window, tmp_path):
    form = make_window().workload
    mine = tmp_path / "tower.py"
    shutil.copy(MODELS / "two_tower.py", mine)
    pick(form, "file", str(mine))
    assert form.valid
    edited = mine.read_text().replace("hidden=32", "hidden=64")  # same size: only the content tells them apart
    mine.write_text(edited)
    assert form.spec_to_run().model_file["text"] == edited
