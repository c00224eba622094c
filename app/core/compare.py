"""Comparing stored runs: rows per run x batch size, repeat groups with medians and 95% intervals.

Prices are looked up in the *current* price book (so a price set or refreshed
after the run counts), each with its source and date.  Speed and cost are only
compared between runs of the same model and workload; inference compares the
same batch size (DESIGN.md §6: compare at the same batch size by default).

Intervals come from repeats (``--repeats N``, fresh processes each): a group of
two or more runs of one spec on one host gets a bootstrap 95% interval of its
median.  A single run has none, and a difference between single runs is
reported as "not tested", never as significant.
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.core.compare_groups import repeat_groups, same_shape
from app.core.cost import (
    TYPE_FROM_PROFILE,
    Candidate,
    break_even_samples,
    cheapest_meeting,
    instance_of,
    price_performance,
    ratio,
    training_budget,
    usd_for_seconds,
    usd_per_million,
)
from app.core.job_cost import JobSize, attach_jobs
from app.core.llm_results import empty_figures, generate_points, llm_cost, llm_figures
from app.core.neuron_options import neuron_settings
from app.core.partial_runs import failed_points
from app.core.pricebook import MARKETS, Price, PriceBook
from app.core.runrecord import USABLE, StoredRun, served_model
from app.core.scaling import scaling_rows
from app.core.serve_results import serve_rows

COMPARE_SCHEMA = "neuronbench.compare/1"
UNIT = {"train": "samples/s", "infer": "inferences/s", "generate": "output tok/s", "serve": "output tok/s"}
WORK = {"train": "samples", "infer": "inferences", "generate": "output tokens", "serve": "output tokens"}


class CompareError(ValueError):
    """The runs cannot be compared as asked (the message says what to change)."""


@dataclass(frozen=True)
class CompareOptions:
    baseline: str | None = None
    market: str = "on_demand"
    max_p99_ms: float | None = None
    min_throughput: float | None = None
    epochs: float | None = None
    samples_per_epoch: int | None = None
    job: JobSize | None = None  # the user's whole job: --job-samples / --job-requests


def model_signature(result: dict[str, Any]) -> str:
    """What was measured, so only like is compared with like: model, task, its arguments, precision.

    A user's file is the same model only with the same content: its SHA-256 (short) is part of it.
    """
    spec = result.get("spec") or {}
    args = spec.get("model_args") or {}
    text = str(spec.get("model") or "?")
    if not text.startswith("hf:"):
        # A running server or the user's own command: the model is what the server said it serves.
        text = served_model(spec, result) or text
    task = spec.get("task") or ("causal-lm" if spec.get("workload") == "generate" else "")  # generate's default
    if task:
        text += f" [{task}]"
    digest = (spec.get("model_file") or {}).get("sha256")
    if digest and text.startswith("file:"):
        text += f" #{digest[:8]}"
    if args:
        text += "(" + ", ".join(f"{k}={json.dumps(v)}" for k, v in sorted(args.items())) + ")"
    return f"{text} {spec.get('precision') or 'fp32'}"


def check_figures(check: dict[str, Any] | None) -> dict[str, Any]:
    """A row's numerical check: ``check_agrees`` (None: not checked or not judged) and its error."""
    if not check:
        return {"check_agrees": None, "check_finite": None, "check_max_rel_err": None}
    return {"check_agrees": check.get("agrees"), "check_finite": check.get("finite"),
            "check_max_rel_err": check.get("max_rel_err")}


def short_model(result: dict[str, Any]) -> str:
    return str((result.get("spec") or {}).get("model") or "the model")


def _rows_of(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Measured figures per static shape: training gives one row, inference one per batch size and length."""
    if result.get("workload") == "train":
        train = result.get("train") or {}
        spec = result.get("spec") or {}
        compile_ = train.get("compile") or {}
        seq_len = (result.get("model") or {}).get("seq_len") or ((spec.get("seq_lens") or [None])[0])
        return [{"batch_size": (spec.get("batch_sizes") or [None])[0], "seq_len": seq_len,
                 "throughput": train.get("throughput_samples_per_s"),
                 "tokens_per_s": train.get("throughput_tokens_per_s"), "latency_p50_ms": None,
                 "latency_p99_ms": None, "p99_reliable": None, "compile_s": compile_.get("seconds"),
                 "steps_ci95": steps_interval(train), **check_figures(train.get("check")), **_efficiency(train),
                 **_stack_figures(result, compile_)}]
    if result.get("workload") == "generate":
        return [generate_row(point) for point in generate_points(result)]
    if result.get("workload") == "serve":  # one row per shape: its operating point (goodput at the SLO)
        return [{**check_figures(None), **_efficiency({}), **row} for row in serve_rows(result)]
    rows = []
    for row in result.get("infer") or []:
        if row.get("error"):  # a point that failed (a partial sweep): said apart, never a row of N/A figures
            continue
        latency = row.get("latency_ms") or {}
        rows.append({"batch_size": row.get("batch_size"), "seq_len": row.get("seq_len"),
                     "throughput": row.get("throughput_per_s"), "tokens_per_s": row.get("tokens_per_s"),
                     "latency_p50_ms": latency.get("p50"), "latency_p99_ms": latency.get("p99"),
                     "p99_reliable": row.get("p99_reliable"), "compile_s": row.get("compile_s"),
                     **check_figures(row.get("check")), **_efficiency(row),
                     **_stack_figures(result, row.get("compile") or {})})
    return rows


def generate_row(point: dict[str, Any]) -> dict[str, Any]:
    """One generate sweep point as a compare row: throughput is output tok/s, latency the call's E2E, and the
    LLM figures (TTFT, TPOT, rates) beside; ``tokens_per_s`` is prompt + output tokens (labelled so)."""
    figures = llm_figures(point)
    return {"batch_size": point.get("batch_size"), "seq_len": None, **figures,
            "throughput": figures["output_tok_s"], "tokens_per_s": figures["total_tok_s"],
            "latency_p50_ms": figures["e2e_p50_ms"], "latency_p99_ms": figures["e2e_p99_ms"],
            "p99_reliable": figures["llm_p99_reliable"],
            # Compile work is the first call's (static caches and graphs compile inside it), load apart.
            "compile_s": point.get("first_call_s"), "load_s": point.get("load_s"), "stack": point.get("stack"),
            "compile_state": point.get("compile_state"), "fallback_ops": list(point.get("fallback_ops") or []),
            "greedy_agreement": (point.get("check") or {}).get("greedy_agreement"),
            "mfu_prefill": point.get("mfu_prefill"), "mfu_decode": point.get("mfu_decode"),
            **check_figures(point.get("check")), **_efficiency(point)}


def stack_text(row: dict[str, Any]) -> str:
    """``native, warm`` / ``xla, loaded`` / ``N/A`` (a GPU or CPU row), with ``!`` when ops fell back to the CPU."""
    if not row.get("stack"):
        return "N/A"
    cell = row["stack"] + (f", {row['compile_state']}" if row.get("compile_state") else "")
    cell += " !" if row.get("fallback_ops") else ""
    return cell + (f" · {', '.join(row['neuron_options'])}" if row.get("neuron_options") else "")


def _stack_figures(result: dict[str, Any], compile_: dict[str, Any]) -> dict[str, Any]:
    """Which device stack ran (Neuron: native TorchNeuron or xla), how the compile went (cold, warm from the
    NEFF cache, loaded: a cached traced artefact) and the ops that fell back to the host CPU (issue 22)."""
    detail = result.get("backend_detail") or {}
    return {"stack": detail.get("stack"), "compile_state": compile_.get("state"),
            "fallback_ops": list(detail.get("fallback_ops") or compile_.get("fallback_ops") or [])}


def _efficiency(part: dict[str, Any]) -> dict[str, Any]:
    """Achieved TFLOP/s and MFU (app.core.mfu fills them in; None with ``mfu_missing`` saying why), how it stopped."""
    basis = part.get("mfu_basis") or {}
    return {"achieved_tflops": basis.get("achieved_tflops", part.get("achieved_tflops")), "mfu": part.get("mfu"),
            "mfu_dtype": basis.get("dtype"), "mfu_missing": basis.get("missing"), "mfu_basis": basis or None,
            # On Neuron: neuron-monitor's own FLOP/s while measuring, shown beside ours (None elsewhere).
            "monitor_tflops": basis.get("monitor_tflops"),
            # --target-ci: why the measurement ended, and the interval it ended on.
            "stopped_by": part.get("stopped_by"), "target_ci_pct": part.get("target_ci_pct"),
            "ci_pct": part.get("ci_pct")}


def steps_interval(train: dict[str, Any]) -> list[float] | None:
    """A single run's throughput interval from its own steps.

    Throughput is the window's samples over its wall time, i.e. the global batch over the
    *mean* step time; so the interval is the global batch over the mean's 95% interval
    (mean ± 1.96 standard errors), and always holds the throughput it belongs to.  Used for
    scaling figures when a node count has no repeats (repeats give the between-run interval).
    """
    step = train.get("step_time_s") or {}
    mean, stdev, n = step.get("mean"), step.get("stdev"), train.get("steps_measured")
    batch = train.get("global_batch")
    if not batch or mean is None or stdev is None or not n or n < 2:
        return None
    half = 1.96 * stdev / n ** 0.5
    if mean - half <= 0:
        return None
    return [batch / (mean + half), batch / (mean - half)]


def benchmark_cost(run: StoredRun, usd_per_hour: float | None) -> dict[str, Any]:
    """What the benchmark itself cost: launch to terminate on an instance NeuronBench launched (as billed),
    else the run's wall time from start to end, setup and compile included, at the current price."""
    result = run.result or {}
    bench = (result.get("cost") or {}).get("benchmark") or {}
    instance_id = (result.get("ec2") or {}).get("instance_id")
    if instance_id:
        return {"instance_id": instance_id, "benchmark_s": bench.get("seconds"), "benchmark_usd": bench.get("usd")}
    seconds = bench.get("seconds")
    if seconds is None and run.started_at is not None and run.ended_at is not None:
        seconds = max(0.0, run.ended_at - run.started_at)  # a run stored before cost.benchmark existed
    return {"instance_id": None, "benchmark_s": seconds, "benchmark_usd": usd_for_seconds(seconds, usd_per_hour)}


def _price_of(run: StoredRun, book: PriceBook, market: str) -> tuple[Price, str]:
    declared = run.declared or {}
    result = run.result or {}
    if not result.get("env") and run.env:
        result = dict(result, env=run.env)
    itype, region, source, _ = instance_of(result, declared.get("instance_type"), declared.get("region"),
                                           declared.get("source") or TYPE_FROM_PROFILE)
    return book.price(itype, region, market), source


def _labels(keys: list[tuple[str, str | None, int]]) -> dict[tuple[str, str | None, int], str]:
    """Instance type where known and unique, host name otherwise, both when two hosts share a type.

    A multi-node run reads ``2 × trn1.32xlarge``: the node count is part of what was measured.
    """
    by_type: dict[tuple[str | None, int], set[str]] = {}
    for host, itype, nodes in keys:
        by_type.setdefault((itype, nodes), set()).add(host)
    labels = {}
    for host, itype, nodes in keys:
        if itype is None:
            label = f"{host} (instance type unknown)"
        elif len(by_type[(itype, nodes)]) > 1:
            label = f"{itype} ({host})"
        else:
            label = itype
        labels[(host, itype, nodes)] = f"{nodes} × {label}" if nodes > 1 else label
    return labels


def nodes_of(result: dict[str, Any]) -> int:
    """How many machines a run spanned (1 for every run before multi-node runs existed)."""
    return int((result.get("train") or {}).get("nodes") or (result.get("spec") or {}).get("nnodes") or 1)


def _hourly(price: Price, nodes: int) -> float | None:
    """What the run's machines cost an hour together: the per-node price times the node count."""
    return None if price.usd_per_hour is None else price.usd_per_hour * nodes


def compare_runs(runs: Sequence[StoredRun], book: PriceBook, options: CompareOptions | None = None,
                 cache_states: dict[str, str | None] | None = None) -> dict:
    """The comparison document: ``rows`` (DESIGN.md §4 compare schema, plus extra keys), ``groups``, etc.

    ``cache_states`` (run id -> compile-cache state from its log) lets a job tell cold from warm compiles.
    """
    options = options or CompareOptions()
    if not runs:
        raise CompareError("name at least one run to compare")
    skipped = []
    usable: list[tuple[StoredRun, Price, str]] = []
    for run in runs:
        if run.status not in USABLE or not run.result:
            reason = {"unfinished": "unfinished: no result was received (re-attach to finish it)",
                      "running": "still running"}.get(run.status) or \
                ((run.result or {}).get("error") or {}).get("message") or f"status {run.status}"
            skipped.append({"run_id": run.run_id, "host": run.host, "status": run.status, "reason": reason})
            continue
        price, source = _price_of(run, book, options.market)
        usable.append((run, price, source))
    if not usable:
        reasons = "; ".join(f"{s['run_id']} on {s['host']}: {s['reason']}" for s in skipped)
        raise CompareError(f"none of the runs has a result to compare ({reasons}); `neuronbench runs show ID` "
                           "shows what happened")
    baseline_id = options.baseline or usable[0][0].run_id
    if baseline_id not in {run.run_id for run, _, _ in usable}:
        why = next((s["reason"] for s in skipped if s["run_id"] == baseline_id), "it is not among the runs compared")
        raise CompareError(f"the baseline run {baseline_id} cannot be used: {why}; pick another with --baseline")

    labels = _labels(sorted({(run.host, price.instance_type, nodes_of(run.result or {})) for run, price, _ in usable},
                            key=lambda k: (k[0], k[1] or "", k[2])))
    rows: list[dict[str, Any]] = []
    for run, price, source in usable:
        result = run.result or {}
        nodes = nodes_of(result)
        usd_h = _hourly(price, nodes)
        for figures in _rows_of(result):
            figures = empty_figures() | figures
            figures.update(llm_cost(usd_h, figures))
            rows.append({
                "run_id": run.run_id, "host": run.host,
                "label": labels[(run.host, price.instance_type, nodes)], "nodes": nodes,
                "nproc": int((result.get("spec") or {}).get("nproc") or 1),
                # Node counts of one setup scale against each other: same instance type, or same first host.
                "family": price.instance_type or run.host.split(",")[0],
                "instance_type": price.instance_type, "instance_type_from": source, "region": price.region,
                "workload": result.get("workload"), "model": model_signature(result), "backend": result.get("backend"),
                "precision": (result.get("spec") or {}).get("precision") or "fp32",
                **figures,
                # --neuron-mode, --neuron-cc-flags (and the channel they reached), --no-compile-cache
                "neuron_options": [w for w in neuron_settings(result.get("spec") or {}, figures.get("stack"))
                                   if not w.startswith("stack ")],
                "unit": UNIT.get(result.get("workload") or "", "per s"),
                "usd_per_hour": usd_h, "usd_per_hour_per_node": price.usd_per_hour,
                "price_source": price.source or None,
                "price_date": price.date_label if price.source else None, "price_note": price.note or None,
                "usd_per_1m": usd_per_million(usd_h, figures["throughput"]),
                "usd_per_1m_tokens": usd_per_million(usd_h, figures["tokens_per_s"]),
                "compile_usd": usd_for_seconds(figures["compile_s"], usd_h),
                "repeat": result.get("repeat"),
                **benchmark_cost(run, usd_h),
            })

    def matches(row: dict[str, Any], base: dict[str, Any]) -> bool:
        same = row["workload"] == base["workload"] and row["model"] == base["model"] and same_shape(row, base)
        return same and (row["workload"] == "train" or row["batch_size"] == base["batch_size"])

    # Each measure (workload, model) has its own baseline: the chosen run where it measured that,
    # otherwise the first run that did.  A training baseline says nothing about inference.
    baselines: dict[tuple[str, str], str] = {}
    for row in sorted(rows, key=lambda r: r["run_id"] != baseline_id):
        baselines.setdefault((row["workload"], row["model"]), row["run_id"])
    base_rows = [r for r in rows if baselines.get((r["workload"], r["model"])) == r["run_id"]]
    for row in rows:
        base = next((b for b in base_rows if matches(row, b)), None)
        row["speedup_vs_baseline"] = ratio(row["throughput"], base["throughput"]) if base else None
        row["price_performance_vs_baseline"] = price_performance(
            row["throughput"], row["usd_per_hour"], base["throughput"], base["usd_per_hour"]) if base else None

    groups = repeat_groups(rows, set(baselines.values()))
    doc: dict[str, Any] = {"schema": COMPARE_SCHEMA, "baseline": baseline_id,
                           "baselines": [{"workload": w, "model": m, "run_id": i} for (w, m), i in baselines.items()],
                           "market": options.market, "rows": rows, "groups": groups, "skipped": skipped,
                           # partial sweeps: compared on the points that finished; these are the ones that failed
                           "partial": [{"run_id": run.run_id, "host": run.host, "label": labels[
                               (run.host, price.instance_type, nodes_of(run.result or {}))],
                               "failed": failed_points(run.result)} for run, price, _ in usable
                               if run.status == "partial"]}
    doc["choice"] = _choice(groups, options)
    doc["budget"] = _budgets(groups, options)
    doc["break_even"] = _break_even(groups)
    doc["scaling"] = scaling_rows(groups)
    doc["job"] = _job(doc, usable, book, options, cache_states or {})
    return doc


def _job(doc: dict[str, Any], usable: list[tuple[StoredRun, Price, str]], book: PriceBook, options: CompareOptions,
         cache_states: dict[str, str | None]) -> dict[str, Any] | None:
    """The user's whole job on every host, on-demand and spot (app.core.job_cost)."""
    if options.job is None:
        for item in doc["rows"] + doc["groups"]:
            item["job_hours"] = item["job_usd"] = None
        return None
    for workload, flag, what in (("train", "--job-samples (or --job-epochs)", "a training"),
                                 ("infer", "--job-requests", "an inference or generate")):
        served = ("infer", "generate") if workload == "infer" else (workload,)
        if options.job.work(workload) is not None and all(r["workload"] not in served for r in doc["rows"]):
            raise CompareError(f"{flag} sizes {what} job, but none of the runs compared is {what} run")
    hourly = {run.run_id: {market: _hourly(_price_of(run, book, market)[0], nodes_of(run.result or {}))
                           for market in MARKETS} for run, _, _ in usable}
    return attach_jobs(doc, options.job, hourly, cache_states)


def _choice(groups: list[dict[str, Any]], options: CompareOptions) -> dict[str, Any] | None:
    if options.max_p99_ms is None and options.min_throughput is None:
        return None
    # A setting whose compiled model gave wrong answers is no option, however cheap.
    candidates = [Candidate(f"{g['label']} batch {g['batch_size']}"
                            + (f" seq {g['seq_len']}" if g.get("seq_len") is not None else ""),
                            g["batch_size"], g["throughput"], g["latency_p99_ms"], g["usd_per_hour"], g["p99_reliable"])
                  for g in groups if g["workload"] == "infer" and g.get("check_agrees") is not False]
    choice = cheapest_meeting(candidates, options.max_p99_ms, options.min_throughput)

    def as_dict(c: Candidate) -> dict[str, Any]:
        return {"label": c.label, "batch_size": c.batch_size, "throughput": c.throughput, "p99_ms": c.p99_ms,
                "usd_per_hour": c.usd_per_hour, "usd_per_1m": c.usd_per_1m, "p99_reliable": c.p99_reliable}

    return {"max_p99_ms": options.max_p99_ms, "min_throughput": options.min_throughput,
            "best": as_dict(choice.best) if choice.best else None,
            "meeting": [as_dict(c) for c in choice.meeting],
            "rejected": [dict(as_dict(c), reason=why) for c, why in choice.rejected]}


def _budgets(groups: list[dict[str, Any]], options: CompareOptions) -> list[dict[str, Any]] | None:
    if not options.epochs or not options.samples_per_epoch:
        return None
    return [dict(training_budget(g["throughput"], g["usd_per_hour"], options.epochs, options.samples_per_epoch,
                                 g["compile_max_s"]).to_dict(), label=g["label"], model=g["model"])
            for g in groups if g["workload"] == "train"]


def _break_even(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Where a host that compiles for longer but trains cheaper per sample overtakes the baseline."""
    out = []
    for group in groups:
        if group["workload"] != "train" or group["is_baseline"] or not group["baseline_label"]:
            continue
        base = next(g for g in groups if g["is_baseline"] and g["workload"] == "train" and g["model"] == group["model"])
        for a, b in ((group, base), (base, group)):
            n = break_even_samples(a["compile_max_usd"], a["usd_per_1m"], b["compile_max_usd"], b["usd_per_1m"])
            if n is not None:
                out.append({"cheaper_after": a["label"], "than": b["label"], "samples": n, "model": group["model"]})
    return out
