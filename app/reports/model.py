"""The report document (``neuronbench.report/1``): every format renders this one dict.

Built from the comparison (app.core.compare) plus what only the run store has:
each run's telemetry buckets and compile-cache state.  JSON output is this
document as is; HTML and PDF render its blocks (app.reports.content); CSV its rows.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.clock_text import utc_iso
from app.core.partial_runs import failed_points
from app.core.runrecord import StoredRun, fingerprint, fingerprint_differences
from app.core.serve_levels import level_rows, server_stack, slo_ttft_ms
from app.core.specs import spec_summary
from app.core.telemetry import utilisation_series
from app.reports.wording import measure_title

REPORT_SCHEMA = "neuronbench.report/1"


@dataclass
class RunMaterial:
    """One run and what the store holds beside its Result."""

    run: StoredRun
    telemetry: list[dict[str, Any]] = field(default_factory=list)
    compile_cache: dict[str, Any] | None = None


def _iso(seconds: float | None) -> str | None:
    return utc_iso(seconds)


def _title(doc: dict[str, Any]) -> str:
    # A stored Result may lack its workload (null): sorted as text, never compared with None.
    measures = sorted({(g["workload"] or "", g["model"].split("(")[0].split(" ")[0]) for g in doc["groups"]})
    labels = list(dict.fromkeys(g["label"] for g in doc["groups"]))
    what = "; ".join(measure_title(workload, model) for workload, model in measures)
    return f"{what or 'Benchmark'} on {', '.join(labels) or 'no host'}"


def _mean_util(telemetry: dict[str, Any] | None) -> float | None:
    """Mean device utilisation while measuring, from a node's telemetry block (None when not read)."""
    devices = [d["util_mean_pct"] for d in ((telemetry or {}).get("measure") or {}).get("devices") or []
               if d.get("util_mean_pct") is not None]
    return sum(devices) / len(devices) if devices else None


def _run_entry(material: RunMaterial, row_labels: dict[str, str], ref: str,
               priced_as: dict[str, Any] | None) -> dict[str, Any]:
    run = material.run
    result = run.result or {}
    train = result.get("train") or {}
    series = utilisation_series(material.telemetry)
    return {
        "ref": ref, "run_id": run.run_id, "host": run.host, "label": row_labels.get(run.run_id, run.host),
        # The type the comparison priced the run as, and where it came from (probe, profile, after the run).
        "instance_type": (priced_as or {}).get("instance_type"),
        "instance_type_from": (priced_as or {}).get("instance_type_from"),
        "status": run.status, "created_at": _iso(run.created_at), "ended_at": _iso(run.ended_at),
        "workload": run.workload, "model": run.model, "spec": run.spec,
        "spec_summary": spec_summary(run.spec) if run.spec and run.spec.get("workload") else None,
        "backend": result.get("backend"), "repeat": result.get("repeat"),
        "fingerprint": fingerprint(run.env or result.get("env")),
        "warnings": list(result.get("warnings") or []),
        "error": result.get("error"),
        "train_window": {"steps_total": train.get("steps_total"), "steps_measured": train.get("steps_measured"),
                         "window": train.get("window"), "compile_steps": (train.get("compile") or {}).get("steps")}
        if train else None,
        "compile_cache": material.compile_cache,
        "cost": result.get("cost"),
        # A partial sweep: the points that failed, each with its sentence (the finished ones are in the rows).
        "failed_points": failed_points(result) if run.status == "partial" else [],
        "serve": _serve(result) if run.workload == "serve" else None,
        # A multi-node run: each node's host, ranks, instance type, status and measured utilisation.
        "nodes": [{"index": n.get("index"), "host": n.get("host"), "ranks": n.get("ranks"), "status": n.get("status"),
                   "instance_type": (n.get("env") or {}).get("instance_type"),
                   "util_mean_pct": _mean_util(n.get("telemetry"))} for n in result.get("nodes") or []],
        "telemetry": {"buckets": len(material.telemetry),
                      "sources": sorted({r.get("source") for r in material.telemetry if r.get("source")}),
                      "series": {name: [[round(t, 3), round(v, 2)] for t, v in points]
                                 for name, points in series.items()}},
    }


def _serve(result: dict[str, Any]) -> dict[str, Any]:
    """A serve run's server, SLO and every load level (the report's level table and its chart)."""
    serve = result.get("serve") or {}
    return {"stack": server_stack(result), "slo_text": serve.get("slo_text"), "slo_ttft_p99_ms": slo_ttft_ms(result),
            "levels": level_rows(result)}


def _methodology(materials: Sequence[RunMaterial], doc: dict[str, Any]) -> dict[str, Any]:
    specs = [m.run.spec or {} for m in materials]
    warmups = sorted({s.get("warmup") for s in specs if s.get("warmup") is not None})
    repeats = sorted({g["n"] for g in doc["groups"]})
    envs = {m.run.run_id: (m.run.env or (m.run.result or {}).get("env")) for m in materials}
    prices = {}
    for row in doc["rows"]:
        key = (row["instance_type"], row["region"])
        prices[key] = {"instance_type": row["instance_type"], "region": row["region"], "market": doc["market"],
                       "usd_per_hour": row["usd_per_hour"], "source": row["price_source"], "date": row["price_date"],
                       "note": row["price_note"]}
    return {
        "warmup": warmups,
        "train": any(s.get("workload") == "train" for s in specs),
        "infer": any(s.get("workload") == "infer" for s in specs),
        "generate": any(s.get("workload") == "generate" for s in specs),
        "serve": any(s.get("workload") == "serve" for s in specs),
        "min_iters": sorted({s.get("min_iters") for s in specs if s.get("workload") == "infer"
                             and s.get("min_iters") is not None}),
        "duration": sorted({s.get("duration") for s in specs if s.get("workload") == "infer"
                            and s.get("duration") is not None}),
        "repeats": repeats,
        "environment_differences": fingerprint_differences(envs),
        "prices": sorted(prices.values(), key=lambda p: (p["instance_type"] or "", p["region"] or "")),
    }


def build_report(materials: Sequence[RunMaterial], compare_doc: dict[str, Any], generator: str,
                 generated_at: float, summary: Sequence[str]) -> dict[str, Any]:
    """The whole report as one JSON-ready dict."""
    by_id = {m.run.run_id: m for m in materials}
    # Short references (R1, R2, …) keep printed tables narrow; the Runs table maps them to run ids.
    refs = {m.run.run_id: f"R{i}" for i, m in enumerate(materials, start=1)}
    row_labels = {row["run_id"]: row["label"] for row in compare_doc["rows"]}
    priced_as = {row["run_id"]: row for row in compare_doc["rows"]}
    rows = []
    for row in compare_doc["rows"]:
        cache = (by_id[row["run_id"]].compile_cache or {}) if row["run_id"] in by_id else {}
        rows.append(dict(row, ref=refs.get(row["run_id"]), compile_cache=cache.get("state")))
    return {
        "schema": REPORT_SCHEMA,
        "title": _title(compare_doc),
        "generated_at": _iso(generated_at),
        "generator": generator,
        "baseline": compare_doc["baseline"],
        "baselines": compare_doc.get("baselines"),
        "market": compare_doc["market"],
        "summary": list(summary),
        "rows": rows,
        "groups": compare_doc["groups"],
        "choice": compare_doc.get("choice"),
        "budget": compare_doc.get("budget"),
        "job": compare_doc.get("job"),
        "break_even": compare_doc.get("break_even"),
        "scaling": compare_doc.get("scaling") or [],
        "skipped": compare_doc.get("skipped"),
        "partial": compare_doc.get("partial") or [],
        "runs": [_run_entry(m, row_labels, refs[m.run.run_id], priced_as.get(m.run.run_id)) for m in materials],
        "methodology": _methodology(materials, compare_doc),
    }
