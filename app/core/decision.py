"""The decision summary: a few sentences worded only as strongly as the measurements allow.

* intervals from repeats that do not overlap -> a plain claim ("1.39x the samples per dollar");
* intervals that overlap -> "about the same … not a significant difference";
* single runs -> the ratio, with "not tested" and how to test it;
* a missing price -> the speed comparison only, and why there is no cost.
"""
from __future__ import annotations

from typing import Any

from app.core import llm_decision
from app.core.compare import WORK
from app.core.serve_results import serve_sentences

_REPEAT_HINT = "use --repeats 3 or more to test it"


def _x(value: float) -> str:
    return f"{value:.2f}×"


def _what(group: dict[str, Any], plural: bool = False) -> str:
    model = group["model"].split("(")[0].split(" ")[0]
    if group["workload"] == "train":
        return f"{'train' if plural else 'trains'} {model}"
    return f"{'serve' if plural else 'serves'} {model} at batch {group['batch_size']}"


def _evidence(group: dict[str, Any], base: dict[str, Any]) -> tuple[bool | None, str]:
    significant = group["price_performance_significant"]
    if significant is None:
        significant = group["faster_significant"]
    counts = f"{group['n']} and {base['n']} repeats"
    if group["n"] < 2 and base["n"] < 2:
        return None, f"one run each, so the difference is not tested; {_REPEAT_HINT}"
    if group["n"] < 2 or base["n"] < 2:
        single = group["label"] if group["n"] < 2 else base["label"]
        return None, f"{single} has a single run, so the difference is not tested; {_REPEAT_HINT}"
    if significant:
        return True, f"{counts}; the 95% intervals do not overlap"
    return False, f"{counts}; the 95% intervals overlap, so this is not a significant difference"


def versus(group: dict[str, Any], base: dict[str, Any]) -> str | None:
    """One sentence comparing a group with its baseline group."""
    work = WORK.get(group["workload"], "work")
    pp, speed = group["price_performance_vs_baseline"], group["speedup_vs_baseline"]
    significant, why = _evidence(group, base)
    if pp is None:
        if speed is None:
            return None
        missing = group if group["usd_per_hour"] is None else base
        return (f"{group['label']} {_what(group)} at {_x(speed)} the {work} per second of {base['label']} "
                f"({why}); cost is not compared: {missing['price_note'] or 'no price for ' + missing['label']}.")
    if significant is False:
        return (f"{group['label']} and {base['label']} {_what(group, plural=True)} at about the same {work} per "
                f"dollar ({_x(pp)}; {why}).")
    speed_text = f" and {_x(speed)} its {work} per second" if speed is not None else ""
    return f"{group['label']} {_what(group)} at {_x(pp)} the {work} per dollar of {base['label']}{speed_text} ({why})."


def _listing(values: list[str]) -> str:
    return values[0] if len(values) == 1 else ", ".join(values[:-1]) + " and " + values[-1]


def versus_sweep(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> str | None:
    """One sentence for an inference sweep: every shared batch size of one host against the baseline's."""
    group, base = pairs[0]
    work = WORK.get(group["workload"], "work")
    model = group["model"].split("(")[0].split(" ")[0]
    evidence = [(_evidence(g, b), g["batch_size"]) for g, b in pairs]
    kinds = {e[0][0] for e in evidence}
    if kinds == {True}:
        why = evidence[0][0][1].replace("do not overlap", "do not overlap at any batch size")
    elif None in kinds:
        why = next(e[0][1] for e in evidence if e[0][0] is None)
    else:
        overlapping = [str(b) for (sig, _), b in evidence if sig is False]
        why = (f"{evidence[0][0][1].split(';')[0]}; the 95% intervals overlap at batch {_listing(overlapping)}, "
               "so the difference there is not significant")
    speeds = [_x(g["speedup_vs_baseline"]) for g, _ in pairs if g["speedup_vs_baseline"] is not None]
    priced = [(g["price_performance_vs_baseline"], g["batch_size"]) for g, _ in pairs
              if g["price_performance_vs_baseline"] is not None]
    if not priced:
        if not speeds:
            return None
        missing = group if group["usd_per_hour"] is None else base
        return (f"{group['label']} serves {model} at {_listing(speeds)} the {work} per second of {base['label']} "
                f"at batch {_listing([str(g['batch_size']) for g, _ in pairs])} ({why}); cost is not compared: "
                f"{missing['price_note'] or 'no price for ' + missing['label']}.")
    per = _listing([f"{_x(pp)} (batch {b})" for pp, b in priced])
    speed_text = f", and {_listing(speeds)} its {work} per second" if speeds else ""
    return f"{group['label']} serves {model} at {per} the {work} per dollar of {base['label']}{speed_text} ({why})."


def summary(doc: dict[str, Any]) -> list[str]:
    """The sentences at the top of a report (and under ``compare``'s table)."""
    groups = doc["groups"]
    sentences: list[str] = []
    pairs: dict[tuple, list[tuple[dict[str, Any], dict[str, Any]]]] = {}
    serve = [g for g in groups if g.get("workload") == "serve"]  # at their SLO: serve_sentences, below
    llm = [g for g in groups if g.get("output_len") is not None and g.get("workload") != "serve"]
    groups = [g for g in groups if g.get("output_len") is None]  # LLM points: their own sentences, below
    for group in llm:
        if group["is_baseline"] or not group["baseline_label"]:
            continue
        base = next((g for g in llm if g["is_baseline"] and g["label"] == group["baseline_label"]
                     and g["model"] == group["model"] and g["batch_size"] == group["batch_size"]
                     and g.get("input_len") == group.get("input_len")
                     and g.get("output_len") == group.get("output_len")), None)
        sentence = llm_decision.versus(group, base, _evidence(group, base)[1]) if base is not None else None
        if sentence:
            sentences.append(sentence)
    for group in groups:
        if group["is_baseline"] or not group["baseline_label"]:
            continue
        base = next(g for g in groups if g["is_baseline"] and g["label"] == group["baseline_label"]
                    and g["workload"] == group["workload"] and g["model"] == group["model"]
                    and (g["workload"] == "train" or g["batch_size"] == group["batch_size"]))
        key = (group["label"], base["label"], group["workload"], group["model"],
               group["batch_size"] if group["workload"] == "train" else None)
        pairs.setdefault(key, []).append((group, base))
    # The chosen baseline's measure first: that is the comparison the user asked for.
    main = next(((b["workload"], b["model"]) for b in doc.get("baselines") or [] if b["run_id"] == doc["baseline"]),
                None)
    for matched in sorted(pairs.values(), key=lambda m: (m[0][0]["workload"], m[0][0]["model"]) != main):
        sentence = versus(*matched[0]) if len(matched) == 1 else versus_sweep(matched)
        if sentence:
            sentences.append(sentence)
    choice = doc.get("choice")
    if choice:
        target = " and ".join(t for t in (
            f"p99 ≤ {choice['max_p99_ms']:g} ms" if choice["max_p99_ms"] is not None else "",
            f"throughput ≥ {choice['min_throughput']:g}/s" if choice["min_throughput"] is not None else "") if t)
        best = choice["best"]
        if best:
            per_1m = f", ${best['usd_per_1m']:.4g} per 1M inferences" if best["usd_per_1m"] is not None else ""
            rough = " (its p99 rests on fewer than 100 requests)" if not best["p99_reliable"] else ""
            sentences.append(f"Cheapest option meeting {target}: {best['label']} at ${best['usd_per_hour']:.4g}/h"
                             f"{per_1m}{rough}.")
        else:
            sentences.append(f"No run meets {target}.")
    unpriced = sorted({g["label"] for g in groups + llm + serve if g["usd_per_hour"] is None})
    for label in unpriced:
        if any(label in s and "cost is not compared" in s for s in sentences):
            continue  # already explained
        note = next(g["price_note"] for g in groups + llm + serve if g["label"] == label)
        sentences.append(f"{label}: cost N/A ({note}).")
    sentences += serve_sentences(serve)
    sentences += wrong_answers(groups + llm)
    sentences += scaling_sentences(doc.get("scaling") or [])
    for skipped in doc.get("skipped") or []:
        sentences.append(f"Run {skipped['run_id']} on {skipped['host']} is left out: {skipped['reason']}.")
    for partial in doc.get("partial") or []:
        failed = "; ".join(f"{f['point']} failed: {f['message'].rstrip('.')}" for f in partial["failed"])
        sentences.append(f"Run {partial['run_id']} on {partial['label']} is partial ({failed}): it is compared on "
                         "the points that finished.")
    if len({g["label"] for g in groups + llm}) == 1:
        sentences[:0] = _one_host(groups) + llm_decision.one_host(llm)
    return sentences


def _shape(group: dict[str, Any]) -> str:
    seq = f", seq {group['seq_len']}" if group.get("seq_len") is not None else ""
    if group.get("output_len") is not None:
        seq = f", {group.get('input_len')} in / {group['output_len']} out"
    return f"batch {group['batch_size']}{seq}"


def wrong_answers(groups: list[dict[str, Any]]) -> list[str]:
    """One sentence per host and model whose compiled model disagreed with eager (or gave NaN)."""
    wrong: dict[tuple[str, str], list[str]] = {}
    for group in groups:
        if group.get("check_agrees") is False:
            wrong.setdefault((group["label"], group["model"]), []).append(_shape(group))
    return [f"{label}: the compiled {model.split('(')[0].split(' ')[0]} disagrees with the eager model on CPU at "
            f"{_listing(shapes)}; its figures are shown but measure a model that computes something else, so no "
            f"recommendation rests on them." for (label, model), shapes in wrong.items()]


def _one_host(groups: list[dict[str, Any]]) -> list[str]:
    """With one host there is nothing to compare against: say what its cheapest setting costs, per model.

    A setting whose compiled model gave wrong answers is never called the cheapest.
    """
    out = []
    # Per model and sequence length: a longer sequence is more work per inference, not a setting to pick.
    measures = sorted({(g["workload"], g["model"], g.get("seq_len") or 0) for g in groups},
                      key=lambda m: (m[0] != "train", m[1], m[2]))
    for workload, model, seq_len in measures:
        trusted = [g for g in groups if g["workload"] == workload and g["model"] == model
                   and (g.get("seq_len") or 0) == seq_len and g.get("check_agrees") is not False]
        priced = [g for g in trusted if g["usd_per_1m"] is not None]
        measured = [g for g in trusted if g["throughput"] is not None]
        if not priced and measured:
            best = max(measured, key=lambda g: g["throughput"])
            where = " (the fastest setting measured)" if len(measured) > 1 else ""
            out.append(f"{best['label']} {_what(best)} at {best['throughput']:.4g} {best['unit']}{where}; its cost "
                       "is N/A until it has a price.")
            continue
        if not priced:
            continue
        best = min(priced, key=lambda g: g["usd_per_1m"])
        name = model.split("(")[0].split(" ")[0] + (f" at sequence length {seq_len}" if seq_len else "")
        lead = f"On {best['label']}, batch {best['batch_size']} is the cheapest setting measured for {name}: " \
            if workload == "infer" and len(priced) > 1 else f"{best['label']} {_what(best)} at "
        out.append(f"{lead}${best['usd_per_1m']:.4g} per 1M {WORK[workload]} ({best['throughput']:.4g} "
                   f"{best['unit']} at ${best['usd_per_hour']:.4g}/h).")
    return out


def _pct(value: float | None) -> str:
    return "N/A" if value is None else f"{value * 100:.0f}%"


def scaling_sentences(rows: list[dict[str, Any]]) -> list[str]:
    """One sentence per scaled setup: from the fewest to the most nodes, speed-up, efficiency and cost."""
    setups: dict[tuple, list[dict[str, Any]]] = {}
    for row in rows:
        setups.setdefault((row["model"], row["batch_size"], row["nproc"], row["family"]), []).append(row)
    out = []
    for (model, _batch, _nproc, family), members in setups.items():
        members = sorted(members, key=lambda r: r["nodes"])
        base, top = members[0], members[-1]
        ci = top["efficiency_ci95"]
        interval = f", 95% interval {_pct(ci[0])}–{_pct(ci[1])}" if ci else ""
        cost = ""
        if base["usd_per_1m"] is not None and top["usd_per_1m"] is not None:
            cost = (f"; ${base['usd_per_1m']:.4g} per 1M samples on {base['nodes']} node(s), "
                    f"${top['usd_per_1m']:.4g} on {top['nodes']}")
        efficiency = f"weak-scaling efficiency {_pct(top['efficiency'])}{interval}"
        name = model.split("(")[0].split(" ")[0]  # the signature's model name, without its arguments
        out.append(f"From {base['nodes']} to {top['nodes']} nodes of {family}, {name} trains "
                   f"{top['speedup']:.2f}× as fast ({efficiency}){cost}.")
    return out
