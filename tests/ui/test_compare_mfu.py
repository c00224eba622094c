"""The compare view's MFU column over real stored runs (tiny ViT on this computer's CPU: no peak, so N/A and why)."""
from __future__ import annotations

import pytest

from tests.ui.test_compare_view import compared, table, view  # noqa: F401
from tests.ui.views_helpers import bridge, show  # noqa: F401

pytestmark = pytest.mark.slow


def test_mfu_is_a_column_that_says_why_a_cpu_run_has_none(view, qtbot, stored_runs):  # noqa: F811
    trn1 = stored_runs.train_trn1  # a real run on this computer's CPU, declared as a trn1.2xlarge for its price
    assert trn1["train"]["flops_per_sample"] > 0  # the agent counted its FLOPs
    compared(qtbot, view, [trn1["run_id"]])
    [row] = table(view)
    assert row["MFU"] == "N/A"
    col = list(table(view)[0]).index("MFU")
    assert view.table.item(0, col).toolTip().endswith("MFU N/A (no known peak for a CPU)")
