"""The user's whole job: hours and dollars for N samples (training) or N requests (inference) on each host.

Pure arithmetic on what ``compare`` already holds: each run's measured throughput,
its compile time and its price (on-demand and spot, times the node count of a
multi-node run).  A job is priced twice, because a real job compiles once:

* **cold**: the compile measured with the compiler running (a new instance starts
  with an empty compile cache);
* **warm**: the compile measured when the Neuron compile cache served every graph
  ("Using a cached neff" in the run's log).

Where no run measured one of the two the figure is None with the reason: a
compile the run never saw is not guessed.  A request is one inference (one input),
served at the row's batch size.  Text models will count tokens later; the job's
size stays in samples and requests.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.core.cost import SECONDS_PER_HOUR, usd_for_seconds
from app.core.pricebook import MARKETS

JOB_UNIT = {"train": "samples", "infer": "requests", "generate": "requests"}
NOTHING_COMPILED = "nothing compiled (eager execution)"


class JobSizeError(ValueError):
    """A job size that is not a count of work (the message names the field)."""


@dataclass(frozen=True)
class JobSize:
    """How much work the user's job is: samples to train on, requests to serve (either or both)."""

    samples: float | None = None
    requests: float | None = None
    # Only for the wording when the size was given as epochs over a dataset (samples = epochs x dataset).
    epochs: float | None = None
    dataset_samples: int | None = None

    def __post_init__(self) -> None:
        for name in ("samples", "requests", "epochs", "dataset_samples"):
            value = getattr(self, name)
            if value is not None and not (value > 0 and value < 1e18):
                raise JobSizeError(f"the job's {name.replace('_', ' ')} must be above 0, not {value}")

    @classmethod
    def of_epochs(cls, epochs: float, dataset_samples: int, requests: float | None = None) -> JobSize:
        """``--job-epochs E --dataset-samples N``: E passes over a dataset of N samples."""
        cls(epochs=epochs, dataset_samples=dataset_samples)  # validates both, naming the field
        return cls(epochs * dataset_samples, requests, epochs, dataset_samples)

    def work(self, workload: str | None) -> float | None:
        return {"train": self.samples, "infer": self.requests, "generate": self.requests}.get(workload or "")

    def describe(self, workload: str) -> str:
        """"3,843,501 samples (3 epochs × 1,281,167)" or "10,000,000 requests"."""
        work = self.work(workload)
        text = f"{work:,.0f} {JOB_UNIT[workload]}"
        if workload == "generate":
            text += " of S in / N out (each row's own prompt and new tokens)"
        if workload == "train" and self.epochs is not None and self.dataset_samples is not None:
            text += f" ({self.epochs:g} epoch{'s' if self.epochs != 1 else ''} × {self.dataset_samples:,})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "requests": self.requests, "epochs": self.epochs,
                "dataset_samples": self.dataset_samples}


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def compile_estimates(compiles: Sequence[tuple[float | None, str | None]], backend: str | None) -> dict[str, Any]:
    """The cold and the warm compile of one host's setting, from its runs' (seconds, cache state) pairs.

    The cache state is app.core.compile_cache's: "cold", "cached", "partly cached", or None
    when no compiler line was logged.  Returns seconds (None: not measured) and a basis each.
    """
    measured = [(s, state) for s, state in compiles if s is not None]
    if not measured:
        why = "no compile time was recorded"
        return {"cold_s": None, "warm_s": None, "cold_basis": why, "warm_basis": why}
    if all(s == 0 for s, _ in measured):
        return {"cold_s": 0.0, "warm_s": 0.0, "cold_basis": NOTHING_COMPILED, "warm_basis": NOTHING_COMPILED}
    cold = [s for s, state in measured if state == "cold"]
    cached = [s for s, state in measured if state == "cached"]
    unknown = [s for s, state in measured if state is None and s > 0]
    if cold:
        cold_s, cold_basis = _median(cold), f"measured cold (the compiler ran), median of {len(cold)} run(s)"
    elif unknown:
        # A new instance starts with an empty cache: the longest compile is the nearest to a cold one.
        cold_s, cold_basis = max(unknown), "the longest compile measured (no compiler log says whether it was cold)"
    else:
        cold_s, cold_basis = None, "every run was served from the compile cache: no cold compile was measured"
    if cached:
        warm_s = _median(cached)
        warm_basis = f"measured with the compile cache warm ('Using a cached neff'), median of {len(cached)} run(s)"
    elif backend == "neuron":
        warm_s, warm_basis = None, ("no run was served from the Neuron compile cache: run it again on the same "
                                    "host to measure a warm start")
    else:
        warm_s, warm_basis = None, (f"the {backend or 'unknown'} backend logs no compile-cache hits, so a warm "
                                    "start cannot be told from these runs")
    return {"cold_s": cold_s, "warm_s": warm_s, "cold_basis": cold_basis, "warm_basis": warm_basis}


def job_figures(work: float, per_second: float | None, compile_: dict[str, Any],
                usd_per_hour: dict[str, float | None]) -> dict[str, Any]:
    """Hours and dollars of ``work`` units at ``per_second``, the compile counted once, cold and warm.

    ``usd_per_hour`` maps each market (on_demand, spot) to what the run's machines cost an
    hour together (None: no price).  Every figure is None where an input is missing.
    """
    work_s = work / per_second if per_second is not None and per_second > 0 else None
    out: dict[str, Any] = {"work": work, "work_hours": None if work_s is None else work_s / SECONDS_PER_HOUR,
                           "compile_cold_s": compile_["cold_s"], "compile_warm_s": compile_["warm_s"],
                           "compile_cold_basis": compile_["cold_basis"], "compile_warm_basis": compile_["warm_basis"]}
    for start in ("cold", "warm"):
        compile_s = compile_[f"{start}_s"]
        total_s = None if work_s is None or compile_s is None else work_s + compile_s
        out[f"hours_{start}"] = None if total_s is None else total_s / SECONDS_PER_HOUR
        for market in MARKETS:
            out[f"usd_{market}_{start}"] = usd_for_seconds(total_s, usd_per_hour.get(market))
    for market in MARKETS:
        out[f"usd_per_hour_{market}"] = usd_per_hour.get(market)
    return out


def cheapest(groups: Sequence[dict[str, Any]], market: str) -> dict[str, Any] | None:
    """The group whose job costs least in ``market`` with a cold compile (None when none is priced)."""
    priced = [g for g in groups if g["job"][f"usd_{market}_cold"] is not None]
    return min(priced, key=lambda g: g["job"][f"usd_{market}_cold"]) if priced else None


def _same_setting(row: dict[str, Any], group: dict[str, Any]) -> bool:
    return row["run_id"] in group["run_ids"] and row["batch_size"] == group["batch_size"] \
        and row["workload"] == group["workload"]


def attach_jobs(doc: dict[str, Any], job: JobSize, hourly: dict[str, dict[str, float | None]],
                cache_states: dict[str, str | None]) -> dict[str, Any]:
    """Add ``job_hours``, ``job_usd`` and ``job`` to every row and group of a comparison; return ``doc["job"]``.

    ``hourly``: run id -> market -> the run's machines' hourly price together; ``cache_states``:
    run id -> compile-cache state read from its log.  ``job_hours`` and ``job_usd`` are the cold
    figures (a job on a new instance) in the comparison's market.
    """
    market = doc["market"]
    for group in doc["groups"]:
        members = [r for r in doc["rows"] if _same_setting(r, group)]
        work = job.work(group["workload"])
        if work is not None and group["workload"] == "generate":
            # N requests of S in / N out: the work is their output tokens, at the measured output tok/s.
            work = work * group["output_len"] if group.get("output_len") else None
        compile_ = compile_estimates([(r["compile_s"], cache_states.get(r["run_id"])) for r in members],
                                     members[0]["backend"] if members else None)
        for row in members:
            row["job"] = None if work is None else job_figures(work, row["throughput"], compile_, hourly[row["run_id"]])
        group["job"] = None if work is None else job_figures(work, group["throughput"], compile_,
                                                             hourly[members[0]["run_id"]] if members else {})
    for item in doc["rows"] + doc["groups"]:
        figures = item.get("job")
        item["job_hours"] = figures["hours_cold"] if figures else None
        item["job_usd"] = figures[f"usd_{market}_cold"] if figures else None
    sized = [g for g in doc["groups"] if g.get("job")]
    best = {workload: cheapest([g for g in sized if g["workload"] == workload], market)
            for workload in JOB_UNIT if workload != "generate"}
    return {"size": job.to_dict(), "market": market,
            "describe": {w: job.describe(w) for w in JOB_UNIT if job.work(w) is not None
                         and any(r["workload"] == w for r in doc["rows"])},
            "cheapest": {w: g["label"] + (f" batch {g['batch_size']}" if w == "infer" else "")
                         for w, g in best.items() if g is not None}}


def job_sentences(doc: dict[str, Any]) -> list[str]:
    """One sentence per sized workload: where the whole job is cheapest, cold and warm, on-demand and spot."""
    block = doc.get("job")
    if not block:
        return []
    out = []
    market = block["market"]
    for workload, what in block["describe"].items():
        if workload == "generate":
            out += _generate_sentences(doc, market)
            continue
        groups = [g for g in doc["groups"] if g["workload"] == workload and g.get("job")]
        best = cheapest(groups, market)
        if best is None:
            out.append(f"Your job of {what}: cost N/A, no host that measured it has a price.")
            continue
        fig = best["job"]
        where = best["label"] + (f" at batch {best['batch_size']}" if workload == "infer" else "")
        warm = f"${fig[f'usd_{market}_warm']:,.2f} with the compile cache warm" \
            if fig[f"usd_{market}_warm"] is not None else "warm-cache cost N/A"
        other = "spot" if market == "on_demand" else "on_demand"
        alt = f"; {other.replace('_', '-')} ${fig[f'usd_{other}_cold']:,.2f}" \
            if fig[f"usd_{other}_cold"] is not None else ""
        out.append(f"Your job of {what} costs least on {where}: {fig['hours_cold']:,.3g} h and "
                   f"${fig[f'usd_{market}_cold']:,.2f} {market.replace('_', '-')} with a cold compile ({warm}{alt}).")
    return out


def _generate_sentences(doc: dict[str, Any], market: str) -> list[str]:
    """generate: one sentence per shape, "Your job of 1,000,000 requests of 128 in / 128 out costs least on ..."."""
    requests = (doc.get("job") or {}).get("size", {}).get("requests")
    groups = [g for g in doc["groups"] if g["workload"] == "generate" and g.get("job")]
    out = []
    shapes = sorted({(g.get("input_len"), g.get("output_len")) for g in groups}, key=lambda s: (s[0] or 0, s[1] or 0))
    for shape in shapes:
        what = f"{requests:,.0f} requests of {shape[0]} in / {shape[1]} out"
        best = cheapest([g for g in groups if (g.get("input_len"), g.get("output_len")) == shape], market)
        if best is None:
            out.append(f"Your job of {what}: cost N/A, no host that measured it has a price.")
            continue
        fig = best["job"]
        out.append(f"Your job of {what} costs least on {best['label']} at batch {best['batch_size']}: "
                   f"{fig['hours_cold']:,.3g} h and ${fig[f'usd_{market}_cold']:,.2f} {market.replace('_', '-')} "
                   f"({fig['work']:,.0f} output tokens at {best['throughput']:,.4g} tok/s, the first call's compile "
                   "counted once).")
    return out


_SUFFIX = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9}


def parse_count(text: str, what: str = "count") -> float | None:
    """A job size as a user types it: "1281167", "1,281,167", "3.8e6", "3.8M", "2k"; blank is None.

    Raises JobSizeError with one sentence for anything else, or for a count not above 0.
    """
    cleaned = text.strip().replace(",", "").replace("_", "").replace(" ", "")
    if not cleaned:
        return None
    factor = _SUFFIX.get(cleaned[-1].lower(), 1.0)
    number = cleaned[:-1] if factor != 1.0 else cleaned
    try:
        value = float(number) * factor
    except ValueError:
        raise JobSizeError(f"{text.strip()!r} is not a {what} (e.g. 1281167, 1.2M or 3e6)") from None
    if not (value > 0 and value < 1e18):
        raise JobSizeError(f"the {what} must be above 0, not {text.strip()}")
    return value
