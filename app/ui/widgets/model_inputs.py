"""The workload form's model rows: the model field, the task, the sequence length(s) and the numerical check.

They turn into the RunSpec fields the CLI sets with ``--model``, ``--task``, ``--seq-len(s)`` and
``--no-check``, with the file a ``file:`` or local ``hf:`` model brings (``model_file``) read the way
``neuronbench run`` reads it (app/services/model_files.py).  While the form is typed the file is read
again only when it changed on disk; ``reread()`` (at Run) reads it afresh.  A stored run's spec shown to
run again keeps the copy of the file stored with it: that copy runs, whatever the file on disk holds now.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QComboBox, QLabel, QLineEdit

from app.core.errors import BadSpecError
from app.core.model_source import TASKS, takes_seq_len, takes_task
from app.core.quoting import clean
from app.core.specs import model_config_problem, parse_sizes
from app.services.model_files import ModelFileCache, model_file_for, shipped_hub_ids
from app.ui.widgets.model_field import ModelField
from remote_agent.protocol import RunSpec

DEFAULT_TASK = ""  # RunSpec's "" is the agent's default head, base (AutoModel)
EMPTY_NAME = {
    "timm": "name a timm model, e.g. vit_base_patch16_224",
    "torchvision": "name a torchvision model, e.g. resnet50",
    "hf": "give a Hugging Face hub id (e.g. bert-large-uncased), or a folder or config.json on this computer",
    "file": "choose your model's .py file (Browse…), or type its path",
}


def _error(message: str, field: str) -> BadSpecError:
    error = BadSpecError(message)
    error.field = field
    return error


def _short(digest: str) -> str:
    return digest[:12]


class ModelInputs:
    """The widgets of the model rows and what they mean for the spec (the form lays them out)."""

    def __init__(self) -> None:
        self.model = ModelField()
        # The hub ids whose config NeuronBench ships (a glob of its own resources): they run without internet.
        self.model.set_names(shipped_hub_ids(), source="hf")
        self.task = QComboBox()
        self.task.addItem("default (base)", DEFAULT_TASK)
        for task in TASKS:
            self.task.addItem(task, task)
        self.seq_lens = QLineEdit()
        self.check = QCheckBox("check against eager (CPU, fp32)")
        self.check.setChecked(True)
        self.stored_note = QLabel()  # says when Run sends a stored run's copy of the file
        self.stored_note.setTextFormat(Qt.TextFormat.PlainText)  # the file's name is the user's text, never markup
        self.stored_note.setWordWrap(True)
        self.stored_note.hide()
        self.files = ModelFileCache()
        self.stored: tuple[str, dict[str, Any]] | None = None  # (the --model string, its stored model_file)

    def widgets(self) -> dict[str, Any]:
        """The fields, by RunSpec field name (their rows follow Model in the form)."""
        return {"task": self.task, "seq_lens": self.seq_lens, "check": self.check}

    # ------------------------------------------------------------ the spec
    def spec_changes(self, workload: str) -> dict[str, Any]:
        """``model``, ``model_file``, ``task``, ``seq_lens``, ``check`` for build_spec; BadSpecError names the field."""
        source = self.model.current_source()
        if not self.model.name.text().strip():
            raise _error(EMPTY_NAME[source], "model")
        model = self.model.text()
        try:
            model_file = self.stored_file(model) or self.files.model_file_for(model)
        except BadSpecError as exc:
            raise _error(str(exc), "model") from None
        lengths: tuple[int, ...] = ()
        text = self.seq_lens.text().strip()
        if takes_seq_len(source) and text:
            try:
                lengths = parse_sizes(text, "--seq-len" if workload == "train" else "--seq-lens")
            except BadSpecError as exc:
                raise _error(str(exc), "seq_lens") from None
        return {"model": model, "model_file": model_file, "seq_lens": lengths, "check": self.check.isChecked(),
                "task": self.task.currentData() if takes_task(source) else DEFAULT_TASK}

    @staticmethod
    def check_config(spec: RunSpec) -> None:
        """What the config sent with an hf: model already says cannot run (the CLI's check, before anything starts)."""
        problem = model_config_problem(spec)
        if problem:
            raise _error(problem, "seq_lens" if problem.startswith("--seq-len") else "model")

    def reread(self) -> None:
        """Forget what was read: the next check reads the model's file as it is now (Run)."""
        self.files = ModelFileCache()

    # ------------------------------------------------------------ a stored run's copy of the file
    def stored_file(self, model: str) -> dict[str, Any] | None:
        if self.stored is not None and self.stored[0] == model:
            return self.stored[1]
        return None

    def keep_stored(self, spec: RunSpec) -> None:
        """Run ``spec``'s own copy of its file (a stored run, run again), not the file on disk."""
        model_file = spec.model_file
        if model_file and isinstance(model_file.get("text"), str):
            self.stored = (spec.model, dict(model_file))
            self.stored_note.setText(f"Run sends the copy of {clean(model_file['name'])} stored with the run "
                                     f"(sha256 {_short(model_file['sha256'])}), not the file on disk; change "
                                     f"the model to read the file again.")
            self.stored_note.setToolTip(clean(model_file["name"]))
            self.stored_note.show()
        else:
            self.forget_stored()

    def forget_stored(self) -> None:
        self.stored = None
        self.stored_note.hide()

    def stored_copy_sentence(self, spec: RunSpec) -> tuple[str, str] | None:
        """(for the run's heading, for its log) when ``spec`` runs a stored copy: which, and how the file on
        disk compares now.

        Reads the file on disk (at Run, once): a user asks at once "but I changed it since".
        """
        stored = self.stored_file(spec.model)
        if stored is None or spec.model_file != stored:
            return None
        try:
            disk = model_file_for(spec.model)
        except BadSpecError:
            now = "the file is not on this computer any more"
        else:
            now = ("the file on disk is the same" if disk and disk["sha256"] == stored["sha256"] else
                   f"the file on disk has changed since (now sha256 {_short(disk['sha256'])})" if disk else
                   "nothing is read from disk for it now")
        copy = f"the stored copy of {stored['name']} (sha256 {_short(stored['sha256'])})"
        return f"runs {copy}", f"Run again: runs {copy} kept with the run in the store; {now}"

    # ------------------------------------------------------------ the form's state
    def form_values(self) -> dict[str, Any]:
        return {"model": self.model.text(), "task": self.task.currentData(), "seq_lens": self.seq_lens.text(),
                "check": self.check.isChecked()}

    def set_form_values(self, values: dict[str, Any]) -> None:
        """Restore what ``form_values`` gave; missing keys (an older saved form) keep their value."""
        if isinstance(values.get("model"), str):
            self.model.setText(values["model"])
            # A name shows its start; a path its end, where the file's own name is.
            path = self.model.current_source() in ("hf", "file")
            self.model.setCursorPosition(len(self.model.name.text()) if path else 0)
        if values.get("task") in [self.task.itemData(i) for i in range(self.task.count())]:
            self.task.setCurrentIndex(self.task.findData(values["task"]))
        if isinstance(values.get("seq_lens"), str):
            self.seq_lens.setText(values["seq_lens"])
        if isinstance(values.get("check"), bool):
            self.check.setChecked(values["check"])

    def show_rows(self, workload: str) -> None:
        """Enable what the source takes: a task for hf, lengths for text models; say what a length means."""
        source = self.model.current_source()
        self.task.setEnabled(takes_task(source))
        text = takes_seq_len(source)
        self.seq_lens.setEnabled(text)
        if not text:
            self.seq_lens.setPlaceholderText("images: no sequence length")
        elif workload == "train":
            self.seq_lens.setPlaceholderText("one length, e.g. 512 (default 128)")
        else:
            self.seq_lens.setPlaceholderText("e.g. 128,512: one compile per batch size and length")
