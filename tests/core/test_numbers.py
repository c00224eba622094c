"""How the views print figures."""
from __future__ import annotations

from app.core.numbers import figure, usd


def test_figures_keep_four_digits_without_e_notation():
    assert [figure(v) for v in (13470.4, 9999.4, 767.24, 0.0123456, None)] == ["13,470", "9999", "767.2", "0.01235",
                                                                                "N/A"]
    assert usd(0.7582) == "$0.7582" and figure(2.0567, 3) == "2.06"
