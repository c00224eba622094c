"""Fitting a heat strip of many cores into few pixels without losing one (no Qt: numpy only).

A strip of 192 vCPU rows in a 150-pixel plot would be drawn by nearest-neighbour
scaling, which skips rows: a vCPU pegged at 100 % could vanish.  Instead rows
are merged in groups of ``per_row`` consecutive cores *by their maximum*, so a
busy core always shows, and the title says how many cores a row holds.
"""
from __future__ import annotations

import math

import numpy as np

MIN_ROW_PX = 2  # below this a row is not a row any more


def rows_per_pixel_row(cores: int, height_px: float, min_row_px: int = MIN_ROW_PX) -> int:
    """How many consecutive cores share one drawn row so each row gets ``min_row_px`` pixels (1: none merged)."""
    if cores <= 0 or height_px <= 0:
        return 1
    fits = max(1, int(height_px // min_row_px))
    return max(1, math.ceil(cores / fits))


def pool_rows(util: np.ndarray, per_row: int) -> np.ndarray:
    """``util`` (time x cores) with each ``per_row`` consecutive cores merged into one column by their maximum.

    NaN (not measured) is ignored in a group and stays NaN only where every core of the group is NaN;
    a last group with fewer cores is merged all the same.
    """
    if per_row <= 1:
        return util
    times, cores = util.shape
    groups = math.ceil(cores / per_row)
    padded = np.full((times, groups * per_row), np.nan)
    padded[:, :cores] = util
    # fmax ignores NaN unless both are NaN: no all-NaN warning, no 0 made up for a missing core.
    return np.fmax.reduce(padded.reshape(times, groups, per_row), axis=2)
