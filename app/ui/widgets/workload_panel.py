"""What to run: workload, model, batch sizes, steps... validated by the engine as you type."""
from __future__ import annotations

import shlex
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import BadSpecError
from app.core.presets import INFER_DEFAULT_BATCH_SIZES, PRESETS
from app.core.serve_points import slo_limits
from app.core.specs import build_spec, flag_for, host_fit_problem, parse_batch_sizes, parse_model_args, parse_sizes
from app.ui import theme
from app.ui.widgets.model_field import ModelField
from app.ui.widgets.model_inputs import ModelInputs
from app.ui.widgets.neuron_inputs import LABELS as NEURON_LABELS
from app.ui.widgets.neuron_inputs import NeuronInputs
from remote_agent.protocol import BACKENDS, DATA_SOURCES, PRECISIONS, SERVERS, WORKLOADS, RunSpec

DEFAULT_PRESET = "quickstart"
CUSTOM = ""
WORKLOAD_LABELS = {"train": "Training", "infer": "Inference", "generate": "Generate (LLM tokens)",
                   "serve": "Serve (an LLM server under load)"}
TRAIN_ONLY = ("steps", "workers", "data")
AUTO_WORKERS = -1  # the workers spin box's "auto" position: RunSpec.workers None, chosen by the agent
DATA_LABELS = {"host": "host: the seed's loader", "device": "device: one batch, reused"}
INFER_ONLY = ("duration", "min_iters")
GENERATE_ONLY = ("input_lens", "output_lens", "compile")
# The preset the form switches to when "Generate" is picked on a spec that cannot generate (a ViT).
GENERATE_PRESET = "tiny-generate"
SERVE_ONLY = ("concurrency", "server", "slo")
# "Serve" on a model that cannot generate: the tiny random Llama behind transformers serve, here at once.
SERVE_PRESET = "tiny-serve"


def form_of(spec: RunSpec, preset: Any) -> dict[str, Any]:
    """The form's values for a spec."""
    return {
        "preset": preset, "workload": spec.workload, "model": spec.model,
        "model_args": _model_args_text(spec.model_args), "task": spec.task,
        "seq_lens": ",".join(str(n) for n in spec.seq_lens), "check": spec.check,
        "backend": spec.backend, "precision": spec.precision,
        "batch_sizes": ",".join(str(b) for b in spec.batch_sizes), "steps": spec.steps, "warmup": spec.warmup,
        "duration": spec.duration, "min_iters": spec.min_iters, "nproc": spec.nproc,
        "workers": AUTO_WORKERS if spec.workers is None else spec.workers, "data": spec.data,
        "target_ci": float(spec.target_ci or 0.0),
        "input_lens": ",".join(str(n) for n in spec.input_lens),
        "output_lens": ",".join(str(n) for n in spec.output_lens), "compile": spec.compile,
        "concurrency": ",".join(str(n) for n in spec.concurrency), "server": spec.server or "transformers",
        "slo": spec.slo, "neuron_stack": spec.neuron_stack, "neuron_mode": spec.neuron_mode,
        "neuron_cc_flags": spec.neuron_cc_flags, "cold_compile": not spec.compile_cache_reuse,
    }


def _model_args_text(args: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in args.items())


def target_ci_box() -> QDoubleSpinBox:
    """``until ±2.0 %`` (--target-ci), or its lowest position: the fixed --steps / --duration."""
    box = QDoubleSpinBox()
    box.setRange(0.0, 50.0)
    box.setDecimals(1)
    box.setSingleStep(0.5)
    box.setPrefix("until ±")
    box.setSuffix(" %")
    box.setSpecialValueText("fixed steps / duration")
    return box


class WorkloadPanel(QWidget):
    """The workload form.  ``spec()`` is the RunSpec to run; ``valid`` says whether there is one."""

    validity_changed = Signal(bool)
    edited = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.valid = False
        self.error_field: str | None = None
        self._spec: RunSpec | None = None
        self._batch_text = {"train": "8", "infer": ",".join(str(b) for b in INFER_DEFAULT_BATCH_SIZES),
                            "generate": "1,4"}
        self._shown_workload = "train"
        self._filling = False
        help_ = RunSpec.field_help()

        self.preset = QComboBox()
        self.preset.addItem("Custom", CUSTOM)
        for preset in PRESETS.values():
            self.preset.addItem(preset.name, preset.name)
            self.preset.setItemData(self.preset.count() - 1, preset.title, Qt.ItemDataRole.ToolTipRole)
        self.preset.setToolTip("start from a ready-made spec; any change makes it Custom")
        self.workload = QComboBox()
        for name in WORKLOADS:
            if name in WORKLOAD_LABELS:  # a workload without a form here (serve has its own) is not offered
                self.workload.addItem(WORKLOAD_LABELS[name], name)
        self.model_inputs = ModelInputs()
        self.model = self.model_inputs.model
        self.task, self.seq_lens, self.check = (self.model_inputs.task, self.model_inputs.seq_lens,
                                                self.model_inputs.check)
        self._args_typed: dict[str, str] = {}  # model args per model source: switching back brings them back
        self._source = self.model.current_source()
        self.model_args = QLineEdit()
        self.model_args.setPlaceholderText("e.g. img_size=32 depth=2 (optional)")
        self.backend = QComboBox()
        self.backend.addItems(BACKENDS)
        self.precision = QComboBox()
        self.precision.addItems(PRECISIONS)
        self.batch_sizes = QLineEdit()
        self.batch_sizes.setPlaceholderText("8, or 1,4,16 for an inference sweep")
        self.steps = self._spin(1, 10_000_000)
        self.warmup = self._spin(0, 10_000_000)
        self.duration = QDoubleSpinBox()
        self.duration.setRange(0.1, 86_400.0)
        self.duration.setDecimals(1)
        self.duration.setSuffix(" s")
        self.min_iters = self._spin(1, 100_000_000)
        self.target_ci = target_ci_box()
        self.nproc = self._spin(1, 256)
        self.workers = self._spin(AUTO_WORKERS, 64)
        self.workers.setSpecialValueText("auto (from the host's vCPUs)")
        self.data = QComboBox()
        for name in DATA_SOURCES:
            self.data.addItem(DATA_LABELS[name], name)
        self.input_lens = QLineEdit()
        self.input_lens.setPlaceholderText("e.g. 128,1024 (default 128)")
        self.output_lens = QLineEdit()
        self.output_lens.setPlaceholderText("e.g. 128 (default 128): exactly this many a row")
        self.compile = QCheckBox("static cache + torch.compile (cuda)")
        self.concurrency = QLineEdit()
        self.concurrency.setPlaceholderText("e.g. 1,2,4,8 (default 1,2,4): requests in flight")
        self.server = QComboBox()
        for name in SERVERS:
            self.server.addItem(name, name)
        self.slo = QLineEdit()
        self.slo.setPlaceholderText("e.g. ttft_p99=2000ms,tpot_p99=100ms or mlperf-llama3.1-8b-server (optional)")
        self._host_envs: dict[str, dict[str, Any]] = {}
        self.neuron = NeuronInputs()

        self.fields: dict[str, QWidget] = {
            "workload": self.workload, "model": self.model, "model_args": self.model_args,
            **self.model_inputs.widgets(), "backend": self.backend, "precision": self.precision,
            "batch_sizes": self.batch_sizes,
            "steps": self.steps, "warmup": self.warmup, "duration": self.duration, "min_iters": self.min_iters,
            "nproc": self.nproc, "workers": self.workers, "data": self.data, "target_ci": self.target_ci,
            "input_lens": self.input_lens, "output_lens": self.output_lens, "compile": self.compile,
            "concurrency": self.concurrency, "server": self.server, "slo": self.slo, **self.neuron.widgets(),
        }
        labels = {"workload": "Workload", "model": "Model", "model_args": "Model args", "task": "Task",
                  "seq_lens": "Sequence length(s)", "check": "Numerical check", "backend": "Backend",
                  "precision": "Precision", "batch_sizes": "Batch size(s)", "steps": "Steps",
                  "warmup": "Warm-up", "duration": "Duration", "min_iters": "Min. requests",
                  "nproc": "Cores / processes", "workers": "Loader workers", "data": "Input data",
                  "target_ci": "Measure", "input_lens": "Prompt tokens", "output_lens": "New tokens",
                  "compile": "Compile", "concurrency": "Concurrency", "server": "Server", "slo": "SLO",
                  **NEURON_LABELS}
        self.form = QFormLayout()
        self.form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.form.addRow("Preset", self.preset)
        self.labels: dict[str, QLabel] = {}
        for name, widget in self.fields.items():
            meta = help_.get(name, {})
            tip = meta.get("help", "")
            flag = flag_for(name)
            widget.setToolTip(f"{tip}\n(CLI: {flag})" if tip else flag)
            label = QLabel(labels[name])
            label.setToolTip(widget.toolTip())
            label.setBuddy(widget)
            self.labels[name] = label
            self.form.addRow(label, widget)

        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setObjectName("validation-message")
        self.message.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.form)
        layout.addWidget(self.model_inputs.stored_note)
        layout.addWidget(self.neuron.note)
        layout.addWidget(self.message)

        self.preset.currentIndexChanged.connect(self._on_preset)
        self.workload.currentIndexChanged.connect(self._on_workload)
        self.model.textChanged.connect(self._on_model)  # before _on_edit: the args follow the source first
        for name, widget in self.fields.items():
            if name == "workload":
                continue
            if isinstance(widget, QComboBox):
                widget.currentIndexChanged.connect(self._on_edit)
            elif isinstance(widget, (QLineEdit, ModelField)):
                widget.textChanged.connect(self._on_edit)
            elif isinstance(widget, QCheckBox):
                widget.toggled.connect(self._on_edit)
            else:
                widget.valueChanged.connect(self._on_edit)
        self.apply_preset(DEFAULT_PRESET)

    @staticmethod
    def _spin(low: int, high: int) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(low, high)
        spin.setGroupSeparatorShown(True)
        return spin

    # ------------------------------------------------------------ reading and writing the form
    def current_workload(self) -> str:
        return str(self.workload.currentData())

    def form_values(self) -> dict[str, Any]:
        """The raw form (what the user typed, valid or not): what the app remembers."""
        return {
            "preset": self.preset.currentData(), "workload": self.current_workload(),
            **self.model_inputs.form_values(), "model_args": self.model_args.text(),
            "backend": self.backend.currentText(),
            "precision": self.precision.currentText(), "batch_sizes": self.batch_sizes.text(),
            "steps": self.steps.value(), "warmup": self.warmup.value(), "duration": self.duration.value(),
            "min_iters": self.min_iters.value(), "nproc": self.nproc.value(), "workers": self.workers.value(),
            "data": self.data.currentData(), "target_ci": self.target_ci.value(),
            "input_lens": self.input_lens.text(), "output_lens": self.output_lens.text(),
            "compile": self.compile.isChecked(), "concurrency": self.concurrency.text(),
            "server": self.server.currentData(), "slo": self.slo.text(), **self.neuron.form_values(),
        }

    def set_form_values(self, values: dict[str, Any]) -> None:
        """Restore a remembered form; unknown or missing keys keep their current value."""
        self._filling = True
        try:
            self._set_combo_data(self.workload, values.get("workload"))
            self._set_combo_data(self.data, values.get("data", "host"))
            self.model_inputs.set_form_values(values)
            self.model_inputs.forget_stored()  # a stored run's copy of its file goes with show_spec alone
            self._source = self.model.current_source()
            self._set_combo_data(self.server, values.get("server", "transformers"))
            for name in ("model_args", "batch_sizes", "input_lens", "output_lens", "concurrency", "slo"):
                if isinstance(values.get(name), str):
                    self.fields[name].setText(values[name])  # type: ignore[attr-defined]
                    self.fields[name].setCursorPosition(0)  # type: ignore[attr-defined]  # show the start
            for name in ("backend", "precision"):
                combo = self.fields[name]
                if values.get(name) in [combo.itemText(i) for i in range(combo.count())]:  # type: ignore[attr-defined]
                    combo.setCurrentText(values[name])  # type: ignore[attr-defined]
            for name in ("steps", "warmup", "min_iters", "nproc", "workers"):
                if isinstance(values.get(name), int):
                    self.fields[name].setValue(values[name])  # type: ignore[attr-defined]
            for name in ("duration", "target_ci"):
                if isinstance(values.get(name), (int, float)):
                    self.fields[name].setValue(float(values[name]))  # type: ignore[attr-defined]
            if isinstance(values.get("compile"), bool):
                self.compile.setChecked(values["compile"])
            self.neuron.set_form_values(values)
            self._set_combo_data(self.preset, values.get("preset", CUSTOM))
        finally:
            self._filling = False
        self._show_rows()
        self.validate()

    def apply_preset(self, name: str) -> None:
        self.set_form_values(form_of(PRESETS[name].spec, preset=name))

    def show_spec(self, spec: RunSpec) -> None:
        """Fill the form with a spec (e.g. a stored run's, to run it again: its copy of the model file runs)."""
        self.set_form_values(form_of(spec, preset=CUSTOM))
        self.model_inputs.keep_stored(spec)
        self.validate()

    @staticmethod
    def _set_combo_data(combo: QComboBox, data: Any) -> None:
        index = combo.findData(data)
        if index >= 0:
            combo.setCurrentIndex(index)

    # ------------------------------------------------------------ validation
    def build(self) -> RunSpec:
        """The RunSpec of the form; raises BadSpecError with the engine's sentence."""
        workload = self.current_workload()
        try:
            args = parse_model_args(shlex.split(self.model_args.text()))
        except ValueError as exc:  # unbalanced quotes
            error = BadSpecError(f"--model-arg: {exc}")
            error.field = "model_args"
            raise error from None
        except BadSpecError as exc:
            exc.field = "model_args"
            raise
        try:
            sizes = parse_batch_sizes(self.batch_sizes.text())
        except BadSpecError as exc:
            exc.field = "batch_sizes"
            raise
        model = self.model_inputs.spec_changes(workload)  # the model file is read as the CLI reads it
        if workload == "generate":
            model.update(self._llm_lengths(), seq_lens=(), compile=self.compile.isChecked())
        if workload == "serve":
            model.update(self._llm_lengths(), seq_lens=(), **self._serve_fields())
        spec = build_spec(RunSpec(workload=workload), workload=workload, model_args=args,
                          backend=self.backend.currentText(),
                          precision=self.precision.currentText(), batch_sizes=sizes, steps=self.steps.value(),
                          warmup=self.warmup.value(), duration=self.duration.value(),
                          min_iters=self.min_iters.value(), nproc=self.nproc.value(), workers=self._workers(),
                          data=self.data.currentData(), target_ci=self.target_ci.value() or None, **model,
                          **self.neuron.spec_changes())
        self.model_inputs.check_config(spec)
        return spec

    def _serve_fields(self) -> dict[str, Any]:
        text = self.concurrency.text().strip()
        try:
            levels = parse_sizes(text, flag_for("concurrency")) if text else ()
        except BadSpecError as exc:
            exc.field = "concurrency"
            raise
        slo = self.slo.text().strip()
        try:
            slo_limits(slo)
        except ValueError as exc:
            error = BadSpecError(str(exc))
            error.field = "slo"
            raise error from None
        return {"concurrency": levels, "server": self.server.currentData(), "slo": slo}

    def _llm_lengths(self) -> dict[str, tuple[int, ...]]:
        lengths = {}
        for name in ("input_lens", "output_lens"):
            text = self.fields[name].text().strip()  # type: ignore[attr-defined]
            try:
                lengths[name] = parse_sizes(text, flag_for(name)) if text else ()
            except BadSpecError as exc:
                exc.field = name
                raise
        return lengths

    def _workers(self) -> int | None:
        return None if self.workers.value() == AUTO_WORKERS else self.workers.value()

    def set_host_envs(self, envs: dict[str, dict[str, Any]]) -> None:
        """The probes of the hosts ticked to run on: the form is also checked against what they have."""
        if envs != self._host_envs:
            self._host_envs = dict(envs)
            self._show_neuron_rows()
            self.validate()

    def _check_hosts(self, spec: RunSpec) -> None:
        """Raise BadSpecError (on the nproc field) if a probed host cannot run ``spec``."""
        for name, env in self._host_envs.items():
            problem = host_fit_problem(spec, env)
            if problem:
                error = BadSpecError(f"{name}: {problem}")
                error.field = "nproc"
                raise error

    def spec(self) -> RunSpec | None:
        """The valid RunSpec, or None while the form holds a mistake."""
        return self._spec

    def spec_to_run(self) -> RunSpec | None:
        """The spec to run now: its model file read as it is on disk at this moment (or a stored run's copy);
        None, with the sentence shown, if that file went wrong since it was checked."""
        self.model_inputs.reread()
        self.validate()
        return self._spec

    def stored_copy_sentence(self, spec: RunSpec) -> tuple[str, str] | None:
        """When ``spec`` runs a stored run's copy of its model file: the sentence for the run's log."""
        return self.model_inputs.stored_copy_sentence(spec)

    def validate(self) -> bool:
        was = self.valid
        try:
            spec = self.build()
            self._check_hosts(spec)
            self._spec = spec
        except BadSpecError as exc:
            self._spec, self.valid = None, False
            self._show_error(str(exc), exc.field)
        else:
            self.valid = True
            self._show_error("", None)
        if was != self.valid:
            self.validity_changed.emit(self.valid)
        return self.valid

    def _show_error(self, message: str, field: str | None) -> None:
        self.error_field = field
        self.message.setText(message)
        self.message.setVisible(bool(message))
        colour = theme.error_text_colour(self.palette())
        for name, label in self.labels.items():
            pal = label.palette()
            role = QPalette.ColorRole.WindowText
            pal.setColor(role, colour if name == field else self.palette().color(role))
            label.setPalette(pal)
        pal = self.message.palette()
        pal.setColor(QPalette.ColorRole.WindowText, colour)
        self.message.setPalette(pal)

    # ------------------------------------------------------------ reactions
    def _on_preset(self) -> None:
        name = self.preset.currentData()
        if name and not self._filling:
            self.apply_preset(name)
            self.edited.emit()

    def _on_workload(self) -> None:
        if self._filling:
            return
        new = self.current_workload()
        if new in ("generate", "serve") and not self.model.text().startswith(("hf:", "file:")):
            # An image model cannot generate: start from the tiny random Llama, which runs here in seconds.
            self.apply_preset(GENERATE_PRESET if new == "generate" else SERVE_PRESET)
            self.edited.emit()
            return
        old = self._shown_workload
        self._filling = True
        self._batch_text[old] = self.batch_sizes.text()
        self.batch_sizes.setText(self._batch_text.get(new, self._batch_text["infer"]))  # one size for training
        self._filling = False
        self._show_rows()
        self._on_edit()

    def _on_model(self) -> None:
        """A new model: a stored run's copy of a file no longer applies; each source keeps its own args."""
        if self._filling:
            return
        self.model_inputs.forget_stored()
        source = self.model.current_source()
        if source != self._source:
            self._args_typed[self._source] = self.model_args.text()
            self._filling = True
            self.model_args.setText(self._args_typed.get(source, ""))
            self._filling = False
            self._source = source
            self._show_rows()

    def _on_edit(self) -> None:
        if self._filling:
            return
        if self.preset.currentData() != CUSTOM:
            self._filling = True
            self.preset.setCurrentIndex(0)
            self._filling = False
        self._show_neuron_rows()
        self.validate()
        self.edited.emit()

    def _show_rows(self) -> None:
        train = self.current_workload() == "train"
        serve = self.current_workload() == "serve"
        generate = self.current_workload() == "generate"
        self._shown_workload = self.current_workload()
        for name in TRAIN_ONLY:
            self.form.setRowVisible(self.fields[name], train)
        for name in INFER_ONLY:
            self.form.setRowVisible(self.fields[name], not train)
        for name in GENERATE_ONLY:
            self.form.setRowVisible(self.fields[name], generate or (serve and name != "compile"))
        for name in SERVE_ONLY:
            self.form.setRowVisible(self.fields[name], serve)
        # prompt and new tokens say it; a server has no batch size of ours (its load is the concurrency)
        self.form.setRowVisible(self.fields["seq_lens"], not (generate or serve))
        self.form.setRowVisible(self.fields["batch_sizes"], not serve)
        self.labels["min_iters"].setText("Min. calls" if generate else "Min. requests a level" if serve
                                         else "Min. requests")
        self.model_inputs.show_rows(self.current_workload())
        if serve:  # the server runs the model: no backend, precision, check or warm-up count of ours
            for name in ("backend", "precision", "check", "task", "warmup", "model_args"):
                self.form.setRowVisible(self.fields[name], False)
        else:
            for name in ("backend", "precision", "warmup", "model_args"):
                self.form.setRowVisible(self.fields[name], True)
        for name in ("task", "seq_lens"):
            self.labels[name].setEnabled(self.fields[name].isEnabled())
        self._show_neuron_rows()

    def _show_neuron_rows(self) -> None:
        """The Neuron rows where they apply (the backend, the ticked hosts' stacks), and the note saying them."""
        self.neuron.show_rows(self.form, self.current_workload(), self.backend.currentText(), self._host_envs)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and hasattr(self, "labels"):
            self._show_error(self.message.text(), self.error_field)
