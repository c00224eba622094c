"""The price override dialog: the current price shown, checks as you type, and a save the CLI sees."""
from __future__ import annotations

import datetime as dt

import pytest
from PySide6.QtCore import Qt

from app.services.pricing import load_pricebook
from app.ui.dialogs.price_dialog import PriceOverrideDialog
from tests.ui.views_helpers import show  # noqa: F401


@pytest.fixture
def dialog(app_paths, show):  # noqa: F811
    return lambda **kwargs: show(PriceOverrideDialog(app_paths, **kwargs), (520, 320))


def test_it_shows_the_current_price_with_its_source_and_date(dialog):
    box = dialog(instance_type="inf2.xlarge", region="us-east-1")
    text = box.current.text()
    assert "on-demand: <b>$0.7582/h</b> — skypilot-org/skypilot-catalog" in text
    assert "spot: <b>$0.1152/h</b>" in text and "(snapshot date unknown)" in text
    regions = [box.region.itemText(i) for i in range(box.region.count())]
    # Every region the price book prices the type in, after the choice that holds everywhere.
    assert regions[0] == "every region" and regions[1:] == sorted(regions[1:])
    assert {"us-east-1", "us-west-2", "eu-west-1", "ap-northeast-1"} <= set(regions)
    box.instance_type.setCurrentText("trn2.48xlarge")
    assert "on-demand: N/A (" in box.current.text()  # no public price: said, not zero


def test_prices_are_checked_as_you_type(dialog, qtbot):
    box = dialog(instance_type="inf2.xlarge")
    assert not box.save_button.isEnabled()
    assert box.message.text() == "give an on-demand or a spot price (or both)"
    qtbot.keyClicks(box.on_demand, "cheap")
    assert not box.save_button.isEnabled()
    assert box.message.text() == "on-demand: 'cheap' is not a price in USD per hour (e.g. 0.7582)"
    box.on_demand.setText("0")
    assert "must be above 0" in box.message.text() and not box.save_button.isEnabled()
    box.on_demand.setText("$0.55")
    assert box.save_button.isEnabled() and box.message.text() == ""
    box.spot.setText("-1")
    assert not box.save_button.isEnabled() and box.message.text().startswith("spot: '-1' is not a price")
    box.spot.clear()
    box.instance_type.setCurrentText("inf9.mega")
    assert box.save_button.isEnabled()  # an unknown type is a warning, not an error
    assert box.message.text() == "inf9.mega is not in the price book: this will be its only price"
    box.instance_type.setCurrentText("inf2 xlarge")
    assert not box.save_button.isEnabled() and "is not an instance type" in box.message.text()


def test_saving_stores_both_prices_with_the_note_where_the_cli_reads_them(dialog, qtbot, app_paths, run_cli):
    box = dialog(instance_type="trn1.2xlarge", region="us-east-1")
    box.on_demand.setText("0.95")
    box.spot.setText("0.2")
    box.note.setText("1-year RI")
    with qtbot.waitSignal(box.prices_changed) as saved:
        qtbot.mouseClick(box.save_button, Qt.MouseButton.LeftButton)
    assert [(e.market, e.usd_per_hour) for e in saved.args[0]] == [("on_demand", 0.95), ("spot", 0.2)]
    assert not box.isVisible()
    price = load_pricebook(app_paths).price("trn1.2xlarge", "us-east-1")
    today = dt.date.today().isoformat()
    assert (price.usd_per_hour, price.source, price.date) == (0.95, "set by you: 1-year RI", today)
    assert load_pricebook(app_paths).price("trn1.2xlarge", "us-east-2").usd_per_hour == 1.34375  # that region only
    rows = run_cli("prices", "list", "--type", "trn1.2xlarge", "--region", "us-east-1", "--json").json()["prices"]
    assert rows[0]["spot"]["usd_per_hour"] == 0.2 and rows[0]["spot"]["source"] == "set by you: 1-year RI"
    # opening it again shows the price just set as the current one
    again = dialog(instance_type="trn1.2xlarge", region="us-east-1")
    assert f"<b>$0.95/h</b> — set by you: 1-year RI ({dt.date.today().isoformat()})" in again.current.text()

