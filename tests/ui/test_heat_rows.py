"""Merging heat-strip rows: no core is ever dropped, a busy one always shows, a missing one stays missing."""
from __future__ import annotations

import numpy as np

from app.ui.models.heat_rows import pool_rows, rows_per_pixel_row


def test_rows_merge_only_when_they_outnumber_the_pixels():
    assert rows_per_pixel_row(2, 150) == 1
    assert rows_per_pixel_row(192, 400) == 1  # two pixels a row fit
    assert rows_per_pixel_row(192, 150) == 3  # 75 rows fit: three vCPUs a row
    assert rows_per_pixel_row(192, 0) == 1  # not laid out yet: nothing to fit


def test_a_group_shows_its_busiest_core_and_the_last_short_group_is_kept():
    util = np.zeros((2, 7))
    util[1, 4] = 100.0
    util[0, 6] = 55.0  # alone in the last group (7 cores in groups of 3)
    pooled = pool_rows(util, 3)
    assert pooled.tolist() == [[0.0, 0.0, 55.0], [0.0, 100.0, 0.0]]


def test_missing_is_ignored_beside_a_reading_and_stays_missing_alone():
    util = np.array([[np.nan, 20.0, np.nan, np.nan]])
    pooled = pool_rows(util, 2)
    assert pooled[0, 0] == 20.0 and np.isnan(pooled[0, 1])
