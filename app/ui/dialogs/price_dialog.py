"""The price override dialog: your own hourly price for an instance type (an RI rate, a discount).

It saves through app.services.pricing.set_user_price, the same call as
``neuronbench prices set``, so the CLI and the app read and write one price
file.  The current price and where it comes from are shown as you type, and
the form is checked as you type with the price book's own sentences.
"""
from __future__ import annotations

import html

from PySide6.QtCore import Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from app.core.pricebook import DEFAULT_REGION, MARKETS, PriceBook, PriceBookError, PriceEntry, parse_usd_per_hour
from app.paths import AppPaths
from app.services import pricing
from app.ui import theme
from app.ui.dialogs.type_region import TypeAndRegion, label_tooltips_from_fields

EVERY_REGION = "every region"


class PriceOverrideDialog(QDialog):
    """``prices_changed(list[PriceEntry])`` after a save; the dialog then closes."""

    prices_changed = Signal(list)

    def __init__(self, paths: AppPaths, instance_type: str | None = None, region: str | None = None,
                 parent: QWidget | None = None, book: PriceBook | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Set your own price")
        self.paths = paths
        self.book = book or pricing.load_pricebook(paths)
        self.saved: list[PriceEntry] = []
        self.valid = False
        self._parsed: dict[str, float | None] = {}

        self.fields = TypeAndRegion(self.book, EVERY_REGION, self._changed)
        self.instance_type, self.region = self.fields.instance_type, self.fields.region
        self.instance_type.setToolTip("the EC2 instance type to price, e.g. inf2.xlarge (any type may be typed)")
        self.region.setToolTip("the region this price holds in; \"every region\" applies it wherever the type runs")
        self.on_demand = QLineEdit()
        self.on_demand.setPlaceholderText("e.g. 0.7582 (empty: keep the current one)")
        self.on_demand.setToolTip("your on-demand price in USD per hour (above 0); leave empty to keep the current")
        self.spot = QLineEdit()
        self.spot.setPlaceholderText("e.g. 0.12 (empty: keep the current one)")
        self.spot.setToolTip("your spot price in USD per hour (above 0); leave empty to keep the current")
        self.note = QLineEdit()
        self.note.setPlaceholderText("e.g. 1-year RI, EDP discount")
        self.note.setToolTip("what this price is: shown as its source in tables and reports")
        self.current = QLabel()
        self.current.setWordWrap(True)
        self.current.setToolTip("the price compare and reports use now, with its source and date")
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setToolTip("keep these prices: they win over the shipped and fetched ones from now on")
        self.buttons.button(QDialogButtonBox.StandardButton.Cancel).setToolTip("close without changing any price")

        form = QFormLayout()
        form.addRow("Instance type", self.instance_type)
        form.addRow("Region", self.region)
        form.addRow("Now", self.current)
        form.addRow("On-demand $/h", self.on_demand)
        form.addRow("Spot $/h", self.spot)
        form.addRow("Note", self.note)
        label_tooltips_from_fields(form)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.message)
        layout.addWidget(self.buttons)

        self.fields.start(instance_type, region)
        for edit in (self.on_demand, self.spot, self.note):
            edit.textChanged.connect(lambda _: self._changed())
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        self._changed()

    # -- values ----------------------------------------------------------------------------------
    def type_value(self) -> str:
        return self.fields.type_value()

    def region_value(self) -> str | None:
        return self.fields.region_value()

    # -- checking as you type ---------------------------------------------------------------------
    def _changed(self) -> None:
        itype, region = self.type_value(), self.region_value()
        self._show_current(itype, region)
        errors: list[str] = []
        warnings: list[str] = []
        if not itype:
            errors.append("name the instance type (e.g. inf2.xlarge)")
        elif any(ch.isspace() for ch in itype):
            errors.append(f"{itype!r} is not an instance type (e.g. inf2.xlarge)")
        elif itype not in self.book.instance_types():
            warnings.append(f"{itype} is not in the price book: this will be its only price")
        if region is not None and any(ch.isspace() for ch in region):
            errors.append(f"{region!r} is not a region (e.g. us-east-1)")
        elif region is not None and itype in self.book.instance_types() and region not in self.book.regions_of(itype):
            warnings.append(f"the price book lists {itype} in {', '.join(self.book.regions_of(itype))}, "
                            f"not {region}")
        self._parsed = {}
        for market, edit in (("on_demand", self.on_demand), ("spot", self.spot)):
            text = edit.text().strip()
            if not text:
                continue
            try:
                self._parsed[market] = parse_usd_per_hour(text)
            except PriceBookError as exc:
                errors.append(f"{'on-demand' if market == 'on_demand' else 'spot'}: {exc}")
        if not self._parsed and not any(e.startswith(("on-demand:", "spot:")) for e in errors):
            errors.append("give an on-demand or a spot price (or both)")
        self.valid = not errors
        self.save_button.setEnabled(self.valid)
        self._show_message(errors, warnings)

    def _show_current(self, itype: str, region: str | None) -> None:
        if not itype:
            self.current.setText("")
            return
        lines = []
        for market in MARKETS:
            price = self.book.price(itype, region or DEFAULT_REGION, market)
            label = "on-demand" if market == "on_demand" else "spot"
            if price.usd_per_hour is None:
                lines.append(f"{label}: N/A ({html.escape(price.note)})")
            else:
                lines.append(f"{label}: <b>${price.usd_per_hour:.6g}/h</b> — {html.escape(price.source_label)}")
        where = "" if region else f" (shown for {DEFAULT_REGION})"
        self.current.setText("<br>".join(lines) + where)

    def _show_message(self, errors: list[str], warnings: list[str]) -> None:
        pal = self.message.palette()
        if errors:
            pal.setColor(QPalette.ColorRole.WindowText, theme.error_text_colour(self.palette()))
            self.message.setText("; ".join(errors))
        else:
            pal.setColor(QPalette.ColorRole.WindowText, self.palette().color(QPalette.ColorRole.WindowText))
            self.message.setText("; ".join(warnings))
        self.message.setPalette(pal)

    # -- saving ------------------------------------------------------------------------------------
    def save(self) -> None:
        """Store each price given (a quick locked write of the user's price file) and close."""
        if not self.valid:
            return
        try:
            self.saved = [pricing.set_user_price(self.paths, self.type_value(), usd, region=self.region_value(),
                                                 market=market, note=self.note.text())
                          for market, usd in self._parsed.items()]
        except (PriceBookError, OSError) as exc:
            self.valid = False
            self._show_message([str(exc)], [])
            return
        self.prices_changed.emit(list(self.saved))
        self.accept()
