"""The model field: a source picker (timm, torchvision, Hugging Face, your file), the name, id or path, and a
file chooser for the sources that read a file on this computer.

It reads and writes one ``--model`` string (``text()`` / ``setText()``), so the form, its saved state
and a stored run's spec keep the CLI's spelling; completions are per source (timm's and torchvision's
names arrive from a worker thread, the shipped hub ids are known at once).
"""
from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QStringListModel, Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QCompleter,
    QFileDialog,
    QGridLayout,
    QLineEdit,
    QMenu,
    QToolButton,
    QWidget,
)

from app.core.model_source import SOURCE_LABELS, SOURCES, join_model, split_model

PLACEHOLDERS = {
    "timm": "timm model name, e.g. vit_base_patch16_224",
    "torchvision": "torchvision model, e.g. resnet50",
    "hf": "hub id (bert-large-uncased), or a folder or config.json here",
    "file": "your .py file, e.g. ~/models/net.py (or net.py:make)",
}
# What a source starts with when first picked: a model that runs, rather than an error to greet the user.
FIRST_NAMES = {"timm": "vit_base_patch16_224", "torchvision": "resnet50", "hf": "bert-large-uncased", "file": ""}
SOURCE_TIPS = {
    "timm": "a timm architecture (timm.create_model, random weights); Model args go to create_model",
    "torchvision": "a torchvision classification model (torchvision.models.get_model, random weights); "
                   "Model args go to get_model (e.g. num_classes=10)",
    "hf": "a transformers model from its config, random weights: a hub id (the host fetches config.json, or "
          "NeuronBench ships it), or a folder or config.json on this computer (sent with the run). Task picks "
          "the head; Model args override the config (num_hidden_layers=4)",
    "file": "your own Python file, read on this computer when you press Run and sent with the run (at most "
            "512 KiB; History's Run again sends the copy stored with the run). The contract:\n"
            "    def build(batch_size, **model_args):\n"
            "        return {'model': a torch.nn.Module,\n"
            "                'inputs': a tuple of tensors in forward's order, or a dict name -> tensor,\n"
            "                'loss': optional, loss(outputs, inputs) -> scalar tensor (training needs it\n"
            "                        unless the outputs carry .loss),\n"
            "                'tokens_per_sample': optional, for tokens/s}\n"
            "PATH.py:FUNCTION calls another function; a function with a seq_len parameter gets the "
            "sequence length",
}


class ModelField(QWidget):
    """``text()`` is the ``--model`` string; ``textChanged`` fires on any change of source or name."""

    textChanged = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.source = QComboBox()
        for name in SOURCES:
            self.source.addItem(SOURCE_LABELS[name], name)
        self.source.setToolTip("where the model comes from")
        self.name = QLineEdit()
        self.name.setClearButtonEnabled(True)
        self._completions = QStringListModel(self)
        completer = QCompleter(self._completions, self)
        completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        completer.setFilterMode(Qt.MatchFlag.MatchContains)
        completer.setMaxVisibleItems(14)
        self.name.setCompleter(completer)
        self.browse = QToolButton()
        self.browse.setText("Browse…")
        # Room for the menu arrow Hugging Face's chooser adds (its size hint leaves none).
        self.browse.setMinimumWidth(self.browse.fontMetrics().horizontalAdvance("Browse…") + 30)
        self._hf_menu = QMenu(self)
        self._hf_menu.addAction("A folder with config.json…", lambda: self.choose_file(folder=True))
        self._hf_menu.addAction("A config.json…", lambda: self.choose_file(folder=False))
        self.dialog: QFileDialog | None = None  # the open file chooser (tests answer it)
        # The source and the chooser above, the name under them at the form's full width: a path or a
        # long timm name needs the room more than the picker does.
        layout = QGridLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.source, 0, 0)
        layout.addWidget(self.browse, 0, 1)
        layout.addWidget(self.name, 1, 0, 1, 2)
        layout.setColumnStretch(0, 1)
        self.setFocusProxy(self.name)

        self._names: dict[str, list[str]] = {source: [] for source in SOURCES}
        self._notes: dict[str, str] = dict.fromkeys(SOURCES, "")
        self._typed = dict(FIRST_NAMES)  # each source's last name: switching back brings it back
        self._help = ""
        self._current = "timm"
        self.source.currentIndexChanged.connect(self._on_source)
        self.name.textChanged.connect(lambda _text: self.textChanged.emit(self.text()))
        self.name.textEdited.connect(self._take_prefix)
        self.browse.clicked.connect(lambda: self.choose_file(folder=False))
        self._show_source()

    # ------------------------------------------------------------ the --model string
    def current_source(self) -> str:
        return str(self.source.currentData())

    def text(self) -> str:
        return join_model(self.current_source(), self.name.text().strip())

    def setText(self, text: str) -> None:  # QLineEdit's names: the form treats both alike
        source, name = split_model(text)
        self.blockSignals(True)
        try:
            self.source.setCurrentIndex(self.source.findData(source))
            self.name.setText(name)
        finally:
            self.blockSignals(False)
        self.textChanged.emit(self.text())

    def setCursorPosition(self, position: int) -> None:
        self.name.setCursorPosition(position)

    def selectAll(self) -> None:
        self.name.selectAll()

    def setToolTip(self, text: str) -> None:
        """The field's help (RunSpec's, from the form): shown under the source's own sentence."""
        self._help = text
        super().setToolTip(text)
        self._show_source()

    # ------------------------------------------------------------ completions
    def set_names(self, names: Iterable[str], note: str = "", source: str = "timm") -> None:
        """Offer ``names`` for ``source`` (``note``, e.g. ``timm 1.0.22``, goes in the placeholder)."""
        self._names[source] = sorted(set(names))
        self._notes[source] = note
        if source == self.current_source():
            self._show_source()

    def names(self, source: str | None = None) -> list[str]:
        return list(self._names[source or self.current_source()])

    # ------------------------------------------------------------ reactions
    def _on_source(self) -> None:
        self._typed[self._current] = self.name.text()
        self._current = self.current_source()
        self.name.blockSignals(True)
        self.name.setText(self._typed.get(self._current) or FIRST_NAMES[self._current])
        self.name.blockSignals(False)
        self._show_source()
        self.textChanged.emit(self.text())

    def _take_prefix(self, text: str) -> None:
        """A pasted ``hf:gpt2`` or ``file:net.py`` moves its source into the picker."""
        source, name = split_model(text)
        if text.startswith(source + ":") and source != self.current_source():
            self.name.blockSignals(True)
            self.name.clear()  # the pasted reference is not this source's name: it keeps none
            self.name.blockSignals(False)
            self.setText(text)
        elif text.startswith(source + ":"):
            self.name.setText(name)

    def _show_source(self) -> None:
        source = self.current_source()
        names = self._names[source]
        self._completions.setStringList(names)
        placeholder = PLACEHOLDERS[source]
        if names and source in ("timm", "torchvision"):
            note = f" ({self._notes[source]})" if self._notes[source] else ""
            placeholder = f"search {len(names)} {SOURCE_LABELS[source]} models{note}"
        self.name.setPlaceholderText(placeholder)
        self.name.setToolTip(SOURCE_TIPS[source] + (f"\n\n{self._help}" if self._help else ""))
        self.browse.setEnabled(source in ("hf", "file"))
        self.browse.setMenu(self._hf_menu if source == "hf" else None)
        self.browse.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup if source == "hf" else
                                 QToolButton.ToolButtonPopupMode.DelayedPopup)
        self.browse.setToolTip("choose your model's .py file" if source == "file" else
                               "choose a folder a Hugging Face model was saved to, or its config.json"
                               if source == "hf" else "timm and torchvision models are named, not files")

    # ------------------------------------------------------------ the file chooser
    def choose_file(self, folder: bool = False) -> QFileDialog | None:
        """Open the chooser for the current source (a .py file; a folder or a config.json); not blocking."""
        source = self.current_source()
        if source not in ("hf", "file") or self.dialog is not None:
            return None
        dialog = QFileDialog(self, "Choose your model's Python file" if source == "file" else
                             "Choose a Hugging Face model folder" if folder else "Choose a config.json")
        dialog.setOption(QFileDialog.Option.DontUseNativeDialog)  # the same chooser everywhere, and in tests
        if folder:
            dialog.setFileMode(QFileDialog.FileMode.Directory)
            dialog.setOption(QFileDialog.Option.ShowDirsOnly)
        else:
            dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
            dialog.setNameFilter("Python files (*.py)" if source == "file" else "Configs (config.json *.json)")
        dialog.fileSelected.connect(self._chosen)
        dialog.finished.connect(self._chooser_closed)
        self.dialog = dialog
        dialog.open()
        return dialog

    def _chosen(self, path: str) -> None:
        if path:
            self.name.setText(path)
            self.name.setCursorPosition(len(path))  # the file's name, not the start of a long path

    def _chooser_closed(self, _code: int) -> None:
        dialog, self.dialog = self.dialog, None
        if dialog is not None:
            dialog.deleteLater()
