"""What a run's view shows of its sweep and its numerical checks: a row per compiled artefact, and a banner.

``SweepTable`` lists each (batch size, sequence length) with its latency, samples/s, tokens/s (text
models) and the check's verdict; a row whose compiled model disagrees with the eager one is in the
error colour.  ``CheckBanner`` says it in one sentence per artefact over the charts, where the user
looks ("batch 4: compiled model disagrees with eager (error 300 % of scale)"): the figures stay, marked.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QLabel, QTableWidget, QTableWidgetItem, QWidget

from app.core.model_text import check_mark, format_check
from app.ui import theme
from app.ui.models.sweep import Sweep, SweepRow


def _num(value: float | None, fmt: str) -> str:
    return "N/A" if value is None else format(value, fmt)


def check_cell(row: SweepRow, checking: bool) -> tuple[str, str]:
    """(the Check column's word, its tooltip)."""
    if row.check:
        return ("✗ " if row.problem else "") + check_mark(row.check), format_check(row.check)
    if not checking:
        return "off", "the numerical check was switched off for this run (--no-check)"
    return ("-" if row.final else "pending", "no check came for this artefact" if row.final else
            "checked right after its compile; a disagreement shows at once, an agreement with the result")


class SweepTable(QTableWidget):
    def __init__(self, checking: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.checking = checking
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.verticalHeader().hide()
        self.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self._shown = -1
        self._sweep: Sweep | None = None

    def update_from(self, sweep: Sweep) -> None:
        self._sweep = sweep
        if sweep.version == self._shown:
            return
        self._shown = sweep.version
        if sweep.generate:
            self._generate_rows(sweep)
            return
        text = sweep.text
        columns = ["Batch", *(["Seq"] if text else []), "State", "Compile s", "Requests", "p50 ms", "p90 ms",
                   "p99 ms", "samples/s", *(["tokens/s"] if text else []), "Check"]
        if self.columnCount() != len(columns):
            self.setColumnCount(len(columns))
            self.setHorizontalHeaderLabels(columns)
        self.setRowCount(len(sweep.rows))
        error = QBrush(theme.error_text_colour(self.palette()))
        for index, row in enumerate(sweep.rows.values()):
            check, tip = check_cell(row, self.checking)
            cells = [str(row.batch_size), *([str(row.seq_len or "")] if text else []), row.state,
                     _num(row.compile_s, ".2f"), f"{row.requests:,}", _num(row.p50_ms, ".2f"), _num(row.p90_ms, ".2f"),
                     _num(row.p99_ms, ".2f"), _num(row.samples_per_s, ",.1f"),
                     *([_num(row.tokens_per_s, ",.0f")] if text else []), check]
            self._fill_row(index, cells, row, tip, error)

    def _generate_rows(self, sweep: Sweep) -> None:
        """generate: a row per (batch, prompt, new tokens) point with TTFT, TPOT, output tok/s and $/1M out."""
        columns = ["Batch", "In", "Out", "State", "First call s", "Calls", "TTFT p50 ms", "TTFT p99 ms",
                   "TPOT p50 ms", "TPOT p99 ms", "output tok/s", "$/1M output", "Check"]
        if self.columnCount() != len(columns) or self.horizontalHeaderItem(1).text() != "In":
            self.setColumnCount(len(columns))
            self.setHorizontalHeaderLabels(columns)
        self.setRowCount(len(sweep.rows))
        error = QBrush(theme.error_text_colour(self.palette()))
        for index, row in enumerate(sweep.rows.values()):
            check, tip = check_cell(row, self.checking)
            lengths = row.lengths or (0, 0)
            cells = [str(row.batch_size), str(lengths[0]), str(lengths[1]), row.state, _num(row.compile_s, ".2f"),
                     f"{row.requests:,}", _num(row.ttft_p50_ms, ".2f"), _num(row.ttft_p99_ms, ".2f"),
                     _num(row.tpot_p50_ms, ".2f"), _num(row.tpot_p99_ms, ".2f"), _num(row.output_tok_s, ",.1f"),
                     "N/A" if row.usd_per_1m_output is None else f"${row.usd_per_1m_output:,.3g}", check]
            self._fill_row(index, cells, row, tip, error)

    def _fill_row(self, index: int, cells: list[str], row: SweepRow, tip: str, error: QBrush) -> None:
        """One row's cells, right-aligned; a failed point's sentence (or a wrong check's) on every tooltip."""
        for column, value in enumerate(cells):
            item = self.item(index, column)
            if item is None:
                item = QTableWidgetItem()
                self.setItem(index, column, item)
            item.setText(value)
            item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            item.setToolTip(row.error or (row.problem or tip if column == len(cells) - 1 else (row.problem or "")))
            item.setForeground(error if row.problem else self.palette().text())

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._sweep is not None:
            self._shown = -1  # the rows' colours follow the palette (light or dark)
            self.update_from(self._sweep)

    def cell_text(self, row: int, column: str) -> str:
        """The text of ``column`` (a header) in ``row`` (tests)."""
        for index in range(self.columnCount()):
            if self.horizontalHeaderItem(index).text() == column:
                item = self.item(row, index)
                return item.text() if item else ""
        raise KeyError(column)


class CheckBanner(QLabel):
    """Over the charts, in the error colour: every artefact whose compiled model gives wrong answers."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("check-banner")
        self.setWordWrap(True)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.setFrameShape(QLabel.Shape.StyledPanel)
        self.setContentsMargins(6, 3, 6, 3)
        self.hide()
        self._shown: list[str] = []

    def update_from(self, sweep: Sweep) -> None:
        problems = sweep.problems()
        if problems == self._shown:
            return
        self._shown = problems
        self.setText("\n".join(f"✗ {sentence}" for sentence in problems))
        self.setToolTip("the numerical check ran the compiled model and the eager model on CPU (fp32) on fresh "
                        "inputs: these figures were measured on a model that gives wrong answers")
        theme.tint_error(self)
        self.setVisible(bool(problems))

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._shown and not getattr(self, "_tinting", False):
            self._tinting = True
            try:
                theme.tint_error(self)
            finally:
                self._tinting = False
