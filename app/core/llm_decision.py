"""The decision sentences of LLM runs: per model, shape and batch, $ per output token against the baseline, TPOT beside.

"Llama-3.1-8B shape, 128 in / 128 out, batch 4: inf2.xlarge 5.1× cheaper per output token than g5.xlarge at
a TPOT within 10% (one run each, so the difference is not tested; use --repeats 3 or more to test it)."
Worded no stronger than the measurements allow (app/core/decision.py's rules for repeats and intervals).
"""
from __future__ import annotations

from typing import Any

TPOT_CLOSE = 0.10  # TPOTs within 10% of each other read "within 10%"


def model_words(model: str) -> str:
    """``hf:meta-llama/Llama-3.1-8B [causal-lm] bf16`` -> ``Llama-3.1-8B shape`` (random weights: a shape)."""
    ref = model.split(" ")[0].split("(")[0]
    name = ref.split(":", 1)[-1].rstrip("/").split("/")[-1] or ref
    return f"{name} shape" if ref.startswith("hf:") else name


def point_words(group: dict[str, Any]) -> str:
    return (f"{model_words(group['model'])}, {group.get('input_len')} in / {group.get('output_len')} out, "
            f"batch {group['batch_size']}")


def _tpot_words(group: dict[str, Any], base: dict[str, Any]) -> str:
    mine, theirs = group.get("tpot_p50_ms"), base.get("tpot_p50_ms")
    if mine is None or theirs is None or theirs <= 0:
        return "(TPOT not measured on both: one new token a call)"
    ratio = mine / theirs
    if abs(ratio - 1.0) <= TPOT_CLOSE:
        return f"at a TPOT within {TPOT_CLOSE * 100:.0f}% ({mine:.3g} vs {theirs:.3g} ms)"
    return (f"at a TPOT {abs(1 - ratio) * 100:.0f}% {'lower' if ratio < 1 else 'higher'} ({mine:.3g} vs "
            f"{theirs:.3g} ms)")


def versus(group: dict[str, Any], base: dict[str, Any], evidence: str) -> str | None:
    mine, theirs = group.get("usd_per_1m_output_tokens"), base.get("usd_per_1m_output_tokens")
    if mine is None or theirs is None or mine <= 0:
        speed = group.get("speedup_vs_baseline")
        if speed is None:
            return None
        return (f"{point_words(group)}: {group['label']} generates {speed:.2f}× the output tokens per second of "
                f"{base['label']} {_tpot_words(group, base)}; cost is not compared: "
                f"{(group if mine is None else base).get('price_note') or 'no price'} ({evidence}).")
    ratio = theirs / mine
    cheaper = f"{ratio:.2g}× cheaper" if ratio >= 1 else f"{1 / ratio:.2g}× dearer"
    return (f"{point_words(group)}: {group['label']} {cheaper} per output token than {base['label']} "
            f"{_tpot_words(group, base)} ({evidence}).")


def one_host(groups: list[dict[str, Any]]) -> list[str]:
    """With one host: per model and shape, the cheapest batch size per output token."""
    out = []
    shapes = sorted({(g["model"], g.get("input_len") or 0, g.get("output_len") or 0) for g in groups})
    for model, s_in, s_out in shapes:
        members = [g for g in groups if (g["model"], g.get("input_len") or 0, g.get("output_len") or 0)
                   == (model, s_in, s_out) and g.get("check_agrees") is not False]
        priced = [g for g in members if g.get("usd_per_1m_output_tokens") is not None]
        where = f"{model_words(model)}, {s_in} in / {s_out} out"
        if not priced:
            measured = [g for g in members if g.get("output_tok_s") is not None]
            if measured:
                best = max(measured, key=lambda g: g["output_tok_s"])
                out.append(f"{where}: {best['label']} generates {best['output_tok_s']:.4g} output tok/s at batch "
                           f"{best['batch_size']}; its cost is N/A until it has a price.")
            continue
        best = min(priced, key=lambda g: g["usd_per_1m_output_tokens"])
        tpot = best.get("tpot_p50_ms")
        out.append(f"{where}: on {best['label']}, batch {best['batch_size']} costs least, "
                   f"${best['usd_per_1m_output_tokens']:.4g} per 1M output tokens ({best['output_tok_s']:.4g} "
                   f"output tok/s, TTFT p50 {best.get('ttft_p50_ms') or 0:.3g} ms"
                   + (f", TPOT p50 {tpot:.3g} ms" if tpot is not None else "") + ").")
    return out
