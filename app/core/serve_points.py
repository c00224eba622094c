"""The operating point of a serve Result, per (input, output) shape (pure; cost and compare read it).

A serve run measures many load levels (closed-loop concurrency levels, and with an SLO Poisson rates).  What
compare, cost and reports show for a host is one level per shape: with an SLO, the level of highest output
tok/s that meets it (the goodput point, research/llm-serving.md §4: cost is quoted there, not at saturation);
without an SLO, the highest output tok/s measured, labelled saturation.  A host whose levels all missed the SLO
still has a point: no figures, and the sentence saying what the best level did.
"""
from __future__ import annotations

from typing import Any

from remote_agent.llm_figures import SloError, goodput_point, level_name, parse_slo, slo_unmet_sentence


def serve_levels(result: dict[str, Any]) -> list[dict[str, Any]]:
    serve = result.get("serve") or {}
    return [lv for lv in serve.get("levels") or [] if isinstance(lv, dict)]


def shapes(levels: list[dict[str, Any]]) -> list[tuple[Any, Any]]:
    seen: list[tuple[Any, Any]] = []
    for level in levels:
        shape = (level.get("input_len"), level.get("output_len"))
        if shape not in seen:
            seen.append(shape)
    return seen


def operating_points(result: dict[str, Any]) -> list[dict[str, Any]]:
    """One point per shape: the level's figures and where it stands against the SLO."""
    serve = result.get("serve") or {}
    slo = serve.get("slo") or None
    levels = serve_levels(result)
    points = []
    for shape in shapes(levels):
        mine = [lv for lv in levels if (lv.get("input_len"), lv.get("output_len")) == shape]
        point = goodput_point(mine, slo)
        unmet = slo_unmet_sentence(mine, slo) if slo else None
        base = dict(point) if point is not None else {"input_len": shape[0], "output_len": shape[1]}
        base.update(slo=slo, slo_text=serve.get("slo_text"), slo_unmet=unmet,
                    slo_met=None if not slo else point is not None,
                    operating_point="goodput" if slo else "saturation",
                    load_name=level_name(point) if point is not None else None,
                    levels=len(mine))
        points.append(base)
    return points


def slo_limits(text: str) -> dict[str, float] | None:
    """An --slo text's limits in ms (None when empty); raises ValueError with the sentence when it does not parse."""
    if not text.strip():
        return None
    try:
        return parse_slo(text)
    except SloError as exc:
        raise ValueError(f"--slo: {exc}") from None
