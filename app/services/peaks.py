"""Reading the shipped peak table (resources/peaks/peak-flops.csv) once per process."""
from __future__ import annotations

import functools

from app.core.errors import NeuronBenchError
from app.core.peak_flops import PeakTable, PeakTableError, parse_peak_csv
from app.paths import resources_dir


@functools.lru_cache(maxsize=1)
def load_peak_table() -> PeakTable:
    """The table; NeuronBenchError (one sentence) when the shipped file is missing or damaged."""
    path = resources_dir() / "peaks" / "peak-flops.csv"
    try:
        return parse_peak_csv(path.read_text(encoding="utf-8"))
    except (OSError, PeakTableError) as exc:
        raise NeuronBenchError(f"the peak-compute table cannot be read, so no MFU is computed: {exc}") from None
