"""Fixed-size numpy ring buffers: appends are O(1) and memory stays flat however long a run lasts."""
from __future__ import annotations

import numpy as np


class Ring:
    """The last ``capacity`` rows of ``width`` float64 columns (NaN marks a missing value)."""

    def __init__(self, capacity: int, width: int = 1, dtype: type = np.float64) -> None:
        self.capacity = capacity
        self.width = width
        self._data = np.full((capacity, width), np.nan, dtype=dtype)
        self._next = 0
        self._size = 0
        self.appended = 0  # rows ever appended (tells a reader whether anything changed)

    def __len__(self) -> int:
        return self._size

    def append(self, *values: float | None) -> None:
        if len(values) != self.width:
            raise ValueError(f"expected {self.width} values, got {len(values)}")
        self._data[self._next] = [np.nan if v is None else v for v in values]
        self._next = (self._next + 1) % self.capacity
        self._size = min(self._size + 1, self.capacity)
        self.appended += 1

    def array(self) -> np.ndarray:
        """The rows in arrival order (a copy, shape ``(len, width)``)."""
        if self._size < self.capacity:
            return self._data[: self._size].copy()
        return np.concatenate((self._data[self._next:], self._data[: self._next]))

    def column(self, index: int) -> np.ndarray:
        return self.array()[:, index]

    def last(self) -> np.ndarray | None:
        if not self._size:
            return None
        return self._data[(self._next - 1) % self.capacity].copy()

    def clear(self) -> None:
        self._data[:] = np.nan
        self._next = self._size = 0
