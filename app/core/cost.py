"""Cost model (DESIGN.md §5): pure functions from throughput and an hourly price.

Every function returns ``None`` when an input is missing or not positive: a
missing price or throughput is "N/A" in every output, never a $0 that would make
the dearest host look free.

The one formula all figures hang on, the same one AWS's Neuron benchmark pages
and NeuronPerf use::

    usd_per_1m = usd_per_hour / 3600 / throughput_per_s * 1e6
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from app.core.pricebook import Price, PriceBook
from app.core.serve_points import operating_points

SECONDS_PER_HOUR = 3600.0
MILLION = 1e6


def _positive(*values: float | None) -> bool:
    return all(v is not None and v > 0 for v in values)


def usd_per_million(usd_per_hour: float | None, per_second: float | None) -> float | None:
    """Dollars per one million units of work (samples, inferences) at ``per_second`` units a second."""
    if not _positive(usd_per_hour, per_second):
        return None
    assert usd_per_hour is not None and per_second is not None
    return usd_per_hour / SECONDS_PER_HOUR / per_second * MILLION


def work_per_dollar(per_second: float | None, usd_per_hour: float | None) -> float | None:
    """Units of work bought with one dollar (the price-performance figure)."""
    if not _positive(usd_per_hour, per_second):
        return None
    assert usd_per_hour is not None and per_second is not None
    return per_second * SECONDS_PER_HOUR / usd_per_hour


def ratio(value: float | None, baseline: float | None) -> float | None:
    """value / baseline, or None when either is missing or the baseline is not positive."""
    if value is None or not _positive(baseline):
        return None
    assert baseline is not None
    return value / baseline


def price_performance(per_second: float | None, usd_per_hour: float | None,
                      base_per_second: float | None, base_usd_per_hour: float | None) -> float | None:
    """Work per dollar relative to a baseline's: 1.4 means 1.4x the samples per dollar."""
    return ratio(work_per_dollar(per_second, usd_per_hour), work_per_dollar(base_per_second, base_usd_per_hour))


def usd_for_seconds(seconds: float | None, usd_per_hour: float | None) -> float | None:
    """What ``seconds`` of the instance cost (compile time, a training budget).  0 s costs $0."""
    if seconds is None or usd_per_hour is None or seconds < 0 or usd_per_hour <= 0:
        return None
    return seconds / SECONDS_PER_HOUR * usd_per_hour


@dataclass(frozen=True)
class TrainingBudget:
    """Time and money for ``epochs`` passes over ``samples_per_epoch`` samples at a measured rate."""

    epochs: float
    samples_per_epoch: int
    samples: float
    train_hours: float | None
    train_usd: float | None
    compile_s: float
    compile_usd: float | None
    total_hours: float | None
    total_usd: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def training_budget(samples_per_s: float | None, usd_per_hour: float | None, epochs: float,
                    samples_per_epoch: int, compile_s: float | None = 0.0) -> TrainingBudget:
    """E.g. 3 epochs of ImageNet's 1,281,167 images: hours and dollars, compile time counted once."""
    if epochs <= 0 or samples_per_epoch <= 0:
        raise ValueError("a training budget needs epochs and samples per epoch above 0")
    samples = epochs * samples_per_epoch
    train_s = samples / samples_per_s if _positive(samples_per_s) else None  # type: ignore[operator]
    compile_s = compile_s or 0.0
    train_usd = usd_for_seconds(train_s, usd_per_hour)
    compile_usd = usd_for_seconds(compile_s, usd_per_hour)
    total_s = None if train_s is None else train_s + compile_s
    return TrainingBudget(
        epochs=epochs, samples_per_epoch=samples_per_epoch, samples=samples,
        train_hours=None if train_s is None else train_s / SECONDS_PER_HOUR, train_usd=train_usd,
        compile_s=compile_s, compile_usd=compile_usd,
        total_hours=None if total_s is None else total_s / SECONDS_PER_HOUR,
        total_usd=None if train_usd is None or compile_usd is None else train_usd + compile_usd)


def break_even_samples(compile_usd_a: float | None, usd_per_1m_a: float | None,
                       compile_usd_b: float | None, usd_per_1m_b: float | None) -> float | None:
    """Samples after which A (dearer to compile, cheaper per sample) costs less in total than B.

    Total cost of n samples is ``compile_usd + n * usd_per_1m / 1e6``; the lines
    cross at ``n = (compile_a - compile_b) / (per_sample_b - per_sample_a)``.
    None when they never cross (A is cheaper or dearer on both counts), or a figure is missing.
    """
    if None in (compile_usd_a, usd_per_1m_a, compile_usd_b, usd_per_1m_b):
        return None
    assert compile_usd_a is not None and compile_usd_b is not None
    assert usd_per_1m_a is not None and usd_per_1m_b is not None
    extra_compile = compile_usd_a - compile_usd_b
    saving_per_sample = (usd_per_1m_b - usd_per_1m_a) / MILLION
    if extra_compile <= 0 or saving_per_sample <= 0:
        return None
    return extra_compile / saving_per_sample


# -- the Result's ``cost`` block (DESIGN.md §4) --------------------------------------------------

# Where a run's instance type came from: the ``instance_type_from`` of its cost block and compare rows.
TYPE_FROM_PROBE = "probe"
TYPE_FROM_PROFILE = "declared"  # the host profile's --instance-type, when the run started
TYPE_FROM_AFTER_RUN = "declared after the run"  # `neuronbench runs set` / History's "Declare instance type"
TYPE_UNKNOWN = "unknown"
_TYPE_FROM_LABELS = {TYPE_FROM_PROBE: "reported by the host", TYPE_FROM_PROFILE: "declared on the host profile",
                     TYPE_FROM_AFTER_RUN: "declared after the run", TYPE_UNKNOWN: "instance type unknown"}


def type_from_label(source: str | None) -> str:
    """Words for where an instance type came from, as tables, tooltips and reports print it."""
    return _TYPE_FROM_LABELS.get(source or TYPE_UNKNOWN, source or "")


def instance_of(result: dict[str, Any], declared_type: str | None = None, declared_region: str | None = None,
                declared_from: str = TYPE_FROM_PROFILE) -> tuple[str | None, str | None, str, list[str]]:
    """(instance type, region, where the type came from, warnings) for a Result.

    The probe (IMDS or neuron-ls on the host) is what the machine *is*; a declared
    type (on the host profile, or after the run: ``declared_from``) fills in when the
    probe found none (not EC2, IMDS blocked in a container).  When both exist and
    differ the probe wins and a warning says so.
    """
    env = result.get("env") or {}
    probed_type, probed_region = env.get("instance_type"), env.get("region")
    warnings: list[str] = []
    if probed_type:
        if declared_type and declared_type != probed_type:
            warnings.append(f"the host profile declares {declared_type} but the host reports {probed_type}; "
                            f"priced as {probed_type}")
        return probed_type, probed_region or declared_region, TYPE_FROM_PROBE, warnings
    if declared_type:
        return declared_type, declared_region or probed_region, declared_from, warnings
    return None, probed_region or declared_region, TYPE_UNKNOWN, warnings


def cost_block(result: dict[str, Any], price: Price, instance_type_from: str) -> dict[str, Any]:
    """The Result's ``cost`` block for one price: per-hour price, its source and date, and per-1M costs.

    Training gets ``usd_per_1m_samples`` and the compile time's cost; inference gets one
    ``usd_per_1m_inferences`` row per batch size and sequence length (with its compile cost).
    Text models add ``usd_per_1m_tokens`` beside them.
    """
    # A multi-node run pays for every machine it spans.
    nodes = int((result.get("train") or {}).get("nodes") or 1)
    usd_h = None if price.usd_per_hour is None else price.usd_per_hour * nodes
    block: dict[str, Any] = {
        "instance_type": price.instance_type, "instance_type_from": instance_type_from,
        "region": price.region, "market": price.market, "usd_per_hour": usd_h,
        "nodes": nodes, "usd_per_hour_per_node": price.usd_per_hour,
        "price_source": price.source or None, "price_date": price.date_label if price.source else None,
        "price_origin": price.origin, "price_note": price.note or None,
    }
    if result.get("workload") == "train":
        train = result.get("train") or {}
        compile_s = (train.get("compile") or {}).get("seconds")
        block["usd_per_1m_samples"] = usd_per_million(usd_h, train.get("throughput_samples_per_s"))
        if train.get("throughput_tokens_per_s"):
            block["usd_per_1m_tokens"] = usd_per_million(usd_h, train.get("throughput_tokens_per_s"))
        block["compile"] = {"seconds": compile_s, "usd": usd_for_seconds(compile_s, usd_h)}
    elif result.get("workload") == "serve":
        block.update(serve_cost(result, usd_h))
    elif result.get("workload") == "generate":
        # $ per 1M output tokens at each sweep point, and per 1M prompt + output tokens (labelled so).
        block["usd_per_1m_output_tokens"] = [
            {"batch_size": row.get("batch_size"), "input_len": row.get("input_len"),
             "output_len": row.get("output_len"),
             "usd_per_1m_output_tokens": usd_per_million(usd_h, row.get("output_tok_s")),
             "usd_per_1m_total_tokens": usd_per_million(usd_h, row.get("total_tok_s")),
             "compile_usd": usd_for_seconds(row.get("first_call_s"), usd_h)}
            for row in result.get("generate") or [] if not row.get("error")]
    else:
        block["usd_per_1m_inferences"] = [
            {"batch_size": row.get("batch_size"), "seq_len": row.get("seq_len"),
             "usd_per_1m": usd_per_million(usd_h, row.get("throughput_per_s")),
             "usd_per_1m_tokens": usd_per_million(usd_h, row.get("tokens_per_s")),
             "compile_usd": usd_for_seconds(row.get("compile_s"), usd_h)}
            for row in result.get("infer") or []]
    return block


# -- choosing a host -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Candidate:
    """One (host, batch size) option for serving: what it delivers and what it costs."""

    label: str
    batch_size: int | None
    throughput: float | None
    p99_ms: float | None
    usd_per_hour: float | None
    p99_reliable: bool = True

    @property
    def usd_per_1m(self) -> float | None:
        return usd_per_million(self.usd_per_hour, self.throughput)


@dataclass(frozen=True)
class Choice:
    best: Candidate | None
    meeting: list[Candidate]
    rejected: list[tuple[Candidate, str]]


def cheapest_meeting(candidates: Sequence[Candidate], max_p99_ms: float | None = None,
                     min_throughput: float | None = None) -> Choice:
    """The cheapest option per hour whose p99 <= ``max_p99_ms`` and throughput >= ``min_throughput``.

    Ties on the hourly price go to the lower cost per 1M inferences.  An option
    with a missing figure cannot be shown to meet a target, so it is rejected with
    the reason rather than assumed to pass.
    """
    meeting: list[Candidate] = []
    rejected: list[tuple[Candidate, str]] = []
    for cand in candidates:
        why = []
        if max_p99_ms is not None:
            if cand.p99_ms is None:
                why.append("p99 N/A")
            elif cand.p99_ms > max_p99_ms:
                why.append(f"p99 {cand.p99_ms:.3g} ms > {max_p99_ms:g} ms")
        if min_throughput is not None:
            if cand.throughput is None:
                why.append("throughput N/A")
            elif cand.throughput < min_throughput:
                why.append(f"throughput {cand.throughput:.4g}/s < {min_throughput:g}/s")
        if cand.usd_per_hour is None:
            why.append("no price")
        if why:
            rejected.append((cand, "; ".join(why)))
        else:
            meeting.append(cand)
    meeting.sort(key=lambda c: (c.usd_per_hour, c.usd_per_1m if c.usd_per_1m is not None else float("inf")))
    return Choice(meeting[0] if meeting else None, meeting, rejected)


BENCHMARK_LAUNCHED = "launch to terminate"
BENCHMARK_WALL = "run start to end"


def benchmark_block(launched_at: float, terminated_at: float | None, price: Price, nodes: int = 1,
                    basis: str = BENCHMARK_LAUNCHED) -> dict[str, Any]:
    """The ``cost.benchmark`` block: what the benchmark itself cost, ``launched_at`` to ``terminated_at`` x price.

    On a launched instance that is launch to terminate (boot, deploy and compile in it);
    on any other priced host the run's wall time from its start to its end (setup and
    compile in it), times ``nodes`` machines.  ``seconds`` is None while an instance
    still runs (kept with ``--keep``).
    """
    seconds = None if terminated_at is None else max(0.0, terminated_at - launched_at)
    usd_h = None if price.usd_per_hour is None else price.usd_per_hour * nodes
    return {"seconds": seconds, "usd": usd_for_seconds(seconds, usd_h),
            "usd_per_hour": usd_h, "market": price.market, "basis": basis, "nodes": nodes,
            "price_source": price.source or None, "price_note": price.note or None}


def apply_cost(result: dict[str, Any], book: PriceBook, declared_type: str | None = None,
               declared_region: str | None = None, market: str = "on_demand",
               declared_from: str = TYPE_FROM_PROFILE,
               wall: tuple[float | None, float | None] | None = None) -> dict[str, Any]:
    """Fill ``result["cost"]`` from the price book (in place; returns the result).

    A run whose instance type is unknown still gets a block: every figure None and a
    ``price_note`` telling the user how to declare the type.  A priced run also gets
    ``cost.benchmark``: on an instance NeuronBench launched (an ``ec2`` block), launch to
    terminate in the market it was launched in (spot or on-demand); on any other host,
    ``wall`` (the run's first and last event times) x the price.
    """
    itype, region, source, warnings = instance_of(result, declared_type, declared_region, declared_from)
    node_types = sorted({(n.get("env") or {}).get("instance_type") or "unknown" for n in result.get("nodes") or []})
    if len(node_types) > 1:
        warnings.append(f"the nodes are of different instance types ({', '.join(node_types)}); priced as "
                        f"{len(result['nodes'])} x {itype or 'unknown'}, node 0's")
    price = book.price(itype, region, market)
    result["cost"] = cost_block(result, price, source)
    ec2 = result.get("ec2")
    if isinstance(ec2, dict) and ec2.get("launched_at") is not None:
        bill = price if ec2.get("market", market) == market else book.price(itype, region, ec2["market"])
        result["cost"]["benchmark"] = benchmark_block(ec2["launched_at"], ec2.get("terminated_at"), bill)
    elif price.usd_per_hour is not None and wall is not None and wall[0] is not None and wall[1] is not None:
        result["cost"]["benchmark"] = benchmark_block(wall[0], wall[1], price, result["cost"]["nodes"],
                                                      BENCHMARK_WALL)
    if warnings:
        result.setdefault("warnings", []).extend(w for w in warnings if w not in result.get("warnings", []))
    return result


def serve_cost(result: dict[str, Any], usd_h: float | None) -> dict[str, Any]:
    """The cost block's serve part: $/1M output and total tokens at each shape's operating point, and the server's
    load (and compile) time's cost apart."""
    server = (result.get("serve") or {}).get("server") or {}
    rows = []
    for point in operating_points(result):
        rows.append({"input_len": point.get("input_len"), "output_len": point.get("output_len"),
                     "concurrency": point.get("concurrency"), "rate": point.get("rate"),
                     "operating_point": point["operating_point"], "slo_met": point["slo_met"],
                     "usd_per_1m_output_tokens": usd_per_million(usd_h, point.get("output_tok_s")),
                     "usd_per_1m_total_tokens": usd_per_million(usd_h, point.get("total_tok_s"))})
    load_s = server.get("load_s")
    return {"usd_per_1m_output_tokens": rows,
            "server_load": {"seconds": load_s, "usd": usd_for_seconds(load_s, usd_h)}}
