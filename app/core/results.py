"""Reading Result JSON (DESIGN.md §4): headline figures, and medians across repeats."""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from remote_agent.stats import bootstrap_ci, percentile

Result = dict[str, Any]


def throughput_rows(result: Result) -> list[tuple[int | None, float | None]]:
    """(batch size, throughput) pairs: one for training, one per batch size for inference."""
    if result.get("workload") == "train":
        train = result.get("train") or {}
        return [(((result.get("spec") or {}).get("batch_sizes") or [None])[0], train.get("throughput_samples_per_s"))]
    return [(row.get("batch_size"), row.get("throughput_per_s")) for row in result.get("infer") or []]


def aggregate_repeats(results: Sequence[Result]) -> list[dict[str, Any]]:
    """Median throughput with a bootstrap 95% interval per (host, batch size) over successful repeats."""
    groups: dict[tuple[str, int | None], list[float]] = defaultdict(list)
    for result in results:
        if result.get("status") not in ("ok", "partial"):  # partial: its finished points count
            continue
        for batch, value in throughput_rows(result):
            if value is not None:
                groups[(result.get("host") or "?", batch)].append(value)
    rows = []
    for (host, batch), values in sorted(groups.items(), key=lambda item: (item[0][0], item[0][1] or 0)):
        ci = bootstrap_ci(values)
        rows.append({"host": host, "batch_size": batch, "repeats": len(values),
                     "median": percentile(values, 50), "ci95": list(ci) if ci else None,
                     "values": values})
    return rows


def failed_result(host: str, spec_dict: dict[str, Any], run_id: str, error: Exception) -> Result:
    """A Result for a run that produced none (the host was unreachable, the agent died)."""
    result = {"schema": "neuronbench.result/1", "run_id": run_id, "host": host, "workload": spec_dict.get("workload"),
              "backend": spec_dict.get("backend"), "status": "failed",
              "error": {"kind": getattr(error, "kind", type(error).__name__), "message": str(error),
                        "detail": getattr(error, "detail", "")},
              "spec": spec_dict, "env": None, "train": None, "infer": None, "cost": None, "telemetry": None,
              "warnings": []}
    refused = getattr(error, "events_refused", None)  # lines of the agent's the session refused (with_refusals)
    if refused:
        result["events_refused"] = refused
    return result
