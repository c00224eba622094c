"""The workload form's Neuron rows: stack, mode, compiler flags and a cold compile (the CLI's Neuron options).

Shown where they apply: the neuron backend, or auto on a ticked host whose probe found a Neuron stack; never for
serve (the server compiles).  A note under the form says which stack each ticked host has and where the flags
go: ``torch_neuronx.trace``'s ``compiler_args`` (XLA-stack inference and generation) or ``NEURON_CC_FLAGS``
(XLA-stack training, the native stack), as app/core/neuron_options says it for every view.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QLabel, QLineEdit, QWidget

from app.core.neuron_options import flags_channel, host_stack, host_stack_text
from remote_agent.protocol import NEURON_MODES

STACKS = (("the host's own", ""), ("native: TorchNeuron (Trn2/Trn3)", "native"),
          ("xla: torch-xla and trace (Inf2/Trn1)", "xla"))
LABELS = {"neuron_stack": "Neuron stack", "neuron_mode": "Neuron mode", "neuron_cc_flags": "Compiler flags",
          "compile_cache_reuse": "Cold compile"}


class NeuronInputs:
    """The four fields (``widgets()``, keyed by their RunSpec field) and the note that goes under the form."""

    def __init__(self) -> None:
        self.stack = QComboBox()
        for text, data in STACKS:
            self.stack.addItem(text, data)
        self.mode = QComboBox()
        for mode in NEURON_MODES:
            self.mode.addItem(mode, mode)
        self.flags = QLineEdit()
        self.flags.setPlaceholderText("e.g. --auto-cast=none (optional)")
        self.cold = QCheckBox("compile cold: load no cached artefact (NEFF or traced model)")
        self.note = QLabel()
        self.note.setObjectName("neuron-note")
        self.note.setWordWrap(True)
        self.note.hide()
        self.shown = False

    def widgets(self) -> dict[str, QWidget]:
        return {"neuron_stack": self.stack, "neuron_mode": self.mode, "neuron_cc_flags": self.flags,
                "compile_cache_reuse": self.cold}

    # ------------------------------------------------------------ values
    def form_values(self) -> dict[str, Any]:
        return {"neuron_stack": self.stack.currentData(), "neuron_mode": self.mode.currentData(),
                "neuron_cc_flags": self.flags.text(), "cold_compile": self.cold.isChecked()}

    def set_form_values(self, values: dict[str, Any]) -> None:
        for combo, key in ((self.stack, "neuron_stack"), (self.mode, "neuron_mode")):
            index = combo.findData(values.get(key, combo.currentData()))
            if index >= 0:
                combo.setCurrentIndex(index)
        if isinstance(values.get("neuron_cc_flags"), str):
            self.flags.setText(values["neuron_cc_flags"])
        if isinstance(values.get("cold_compile"), bool):
            self.cold.setChecked(values["cold_compile"])

    def spec_changes(self) -> dict[str, Any]:
        """The spec's Neuron fields: what the form says where the rows apply, the defaults where they do not."""
        if not self.shown:
            return {}
        return {"neuron_stack": self.stack.currentData(), "neuron_mode": self.mode.currentData(),
                "neuron_cc_flags": " ".join(self.flags.text().split()),
                "compile_cache_reuse": not self.cold.isChecked()}

    # ------------------------------------------------------------ where they apply
    def show_rows(self, form: QFormLayout, workload: str, backend: str, envs: dict[str, dict[str, Any]]) -> None:
        """Show the rows where they apply, the mode only where the native stack may run, and the note."""
        stacks = {name: host_stack(env) for name, env in envs.items()}
        self.shown = workload != "serve" and (backend == "neuron" or (backend == "auto" and any(stacks.values())))
        chosen = self.stack.currentData() or None
        running = {chosen} if chosen else {s for s in stacks.values() if s} or {None}
        for name, widget in self.widgets().items():
            form.setRowVisible(widget, self.shown and (name != "neuron_mode" or bool(running & {"native", None})))
        self.note.setVisible(self.shown)
        if not self.shown:
            return
        if envs:
            found = "; ".join(f"{name}: {host_stack_text(env)}" for name, env in envs.items())
        else:
            found = "no ticked host probed yet: each runs the stack it has"
        channel = " or ".join(sorted({flags_channel(workload, stack) for stack in running}))
        self.note.setText(f"Neuron stack on the host — {found}. Compiler flags reach {channel}.")
