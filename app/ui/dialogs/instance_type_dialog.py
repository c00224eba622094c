"""Declaring the instance type stored runs ran on (History → "Declare instance type…").

The same check as ``neuronbench runs set RUN --instance-type T`` (app.core.declared_type),
as you type: a type the price book does not know is named with its close matches,
and the price it would get (with its source and date) is shown before anything is
saved.  The dialog only collects the answer; the history view writes it to the store
on a worker thread.
"""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from app.core.declared_type import declaration_problem
from app.core.numbers import usd
from app.core.pricebook import DEFAULT_REGION, PriceBook
from app.core.runrecord import StoredRun
from app.ui import theme
from app.ui.dialogs.type_region import TypeAndRegion, label_tooltips_from_fields

REGION_NOT_GIVEN = f"not given (priced as {DEFAULT_REGION})"
WORKLOADS = {"train": "training", "infer": "inference"}


def runs_text(runs: list[StoredRun]) -> str:
    """The runs the declaration is for, in a line or two."""
    first = runs[0]
    what = f"{WORKLOADS.get(first.workload or '', first.workload or '?')} {first.model or ''}".strip()
    if len(runs) == 1:
        return f"Run {first.run_id} ({what} on {first.host})"
    more = ", ".join(run.run_id for run in runs[1:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
    return f"{len(runs)} runs: {first.run_id} ({what} on {first.host}), {more}"


def intro_text(runs: list[StoredRun]) -> str:
    """What the dialog is for, about these runs (rich text)."""
    priced = sorted({run.instance_type for run in runs if run.instance_type})
    now = (f"its host reported no instance type; it is priced now as {', '.join(priced)}, declared earlier"
           if priced else "its host did not report its instance type, so it has no price")
    return (f"{html.escape(runs_text(runs))}: {html.escape(now)}. Name the EC2 instance type it ran on: it is "
            "priced from the price book and shown as <i>declared after the run</i> in History, Compare and reports.")


class InstanceTypeDialog(QDialog):
    """``declared(instance_type, region or "")`` when the user confirms a declaration the price book can price."""

    declared = Signal(str, str)

    def __init__(self, runs: list[StoredRun], book: PriceBook, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Declare the instance type")
        self.book = book
        self.runs = list(runs)
        self.valid = False

        intro = QLabel(intro_text(self.runs))
        intro.setWordWrap(True)
        self.fields = TypeAndRegion(book, REGION_NOT_GIVEN, self._changed, regions_of_known_type_only=True)
        self.instance_type, self.region = self.fields.instance_type, self.fields.region
        self.instance_type.lineEdit().setPlaceholderText("e.g. inf2.xlarge")
        self.instance_type.setToolTip("the EC2 instance type the run ran on; completed from the price book's types")
        self.region.setToolTip(f"the AWS region it ran in; when not given the run is priced as {DEFAULT_REGION}, "
                               "and its cost says so")
        self.price = QLabel()
        self.price.setWordWrap(True)
        self.price.setTextFormat(Qt.TextFormat.RichText)
        self.price.setToolTip("the on-demand price the run will be costed at, with its source and date")
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.declare_button = self.buttons.addButton("Declare", QDialogButtonBox.ButtonRole.AcceptRole)
        self.declare_button.setToolTip("keep this instance type for the run(s) and price them with it")
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setToolTip("close without changing the runs")

        form = QFormLayout()
        form.addRow("Instance type", self.instance_type)
        form.addRow("Region", self.region)
        form.addRow("Price", self.price)
        label_tooltips_from_fields(form)
        layout = QVBoxLayout(self)
        layout.addWidget(intro)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)
        self.setMinimumWidth(520)

        declared = (self.runs[0].declared or {}) if len(self.runs) == 1 else {}
        self.fields.start(declared.get("instance_type"), declared.get("region"))
        self.buttons.accepted.connect(self.confirm)
        self.buttons.rejected.connect(self.reject)
        self._changed()

    # -- values -------------------------------------------------------------------------------------
    def type_value(self) -> str:
        return self.fields.type_value()

    def region_value(self) -> str | None:
        return self.fields.region_value()

    def _known_type(self) -> str | None:
        return self.fields.known_type()

    # -- checking as you type -----------------------------------------------------------------------
    def _changed(self) -> None:
        problem = declaration_problem(self.book, self.type_value(), self.region_value())
        self.valid = problem is None
        self.declare_button.setEnabled(self.valid)
        self._show_price(None if problem else self._known_type())
        pal = self.message.palette()
        colour = theme.error_text_colour(self.palette()) if problem else \
            self.palette().color(QPalette.ColorRole.WindowText)
        pal.setColor(QPalette.ColorRole.WindowText, colour)
        self.message.setPalette(pal)
        self.message.setText(problem or "")

    def _show_price(self, itype: str | None) -> None:
        if itype is None:
            self.price.setText("N/A")
            return
        price = self.book.price(itype, self.region_value())
        if price.usd_per_hour is None:
            self.price.setText(f"N/A: {html.escape(price.note)}")
            return
        note = f"<br>{html.escape(price.note)}" if price.note else ""
        self.price.setText(f"<b>{usd(price.usd_per_hour)}/h</b> on-demand in {html.escape(price.region or '')} — "
                           f"{html.escape(price.source_label)}{note}")

    def confirm(self) -> None:
        if not self.valid:
            return
        self.declared.emit(self._known_type() or self.type_value(), self.region_value() or "")
        self.accept()
