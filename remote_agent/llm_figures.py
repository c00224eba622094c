"""One set of LLM figures for `generate` (per step, in process) and `serve` (per streamed chunk, over HTTP).

Everything here is a pure function of timestamps the workload recorded (DESIGN.md §11,
research/llm-generation.md §6, research/llm-serving.md).  B rows, S prompt tokens, N new tokens:

- TTFT = start -> first new token available; E2E = start -> last token;
- TPOT = (E2E - TTFT) / (N - 1), one value per call or request (None when N = 1: no decode step);
- ITL = the gaps between consecutive tokens (steps or chunks) *within* one call or request, never across
  calls (counting the gap between two calls is optimum-benchmark's bug);
- decode tok/s = B (N - 1) / (E2E - TTFT); prefill tok/s = B S / TTFT; output tok/s = B N / E2E;
- serving throughput is over [first send, last response]; goodput counts the requests that meet every SLO.

Shared by the agent and the app: stdlib only, Python 3.8.
"""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

from remote_agent.stats import bootstrap_ci, percentile

# The p99 of fewer than this many values is its single largest: flagged, not hidden (DESIGN.md §5).
P99_MIN_VALUES = 100
METRICS = ("ttft", "tpot", "itl", "e2e")
# MLPerf Inference's latency limits (ms, p99 TTFT and TPOT) per benchmark model and scenario, the presets of --slo
# (mlcommons/inference loadgen/mlperf.conf, inference_rules.adoc; research/llm-serving.md §1).  They are that
# model's limits: holding another model to them is the user's choice, made by naming the preset.
SLO_PRESETS = {
    "mlperf-llama3.1-8b-server": {"ttft_p99": 2000.0, "tpot_p99": 100.0},
    "mlperf-llama3.1-8b-interactive": {"ttft_p99": 500.0, "tpot_p99": 30.0},
    "mlperf-llama2-70b-server": {"ttft_p99": 2000.0, "tpot_p99": 200.0},
    "mlperf-llama2-70b-interactive": {"ttft_p99": 450.0, "tpot_p99": 40.0},
    "mlperf-llama3.1-405b-server": {"ttft_p99": 6000.0, "tpot_p99": 175.0},
    "mlperf-llama3.1-405b-interactive": {"ttft_p99": 4500.0, "tpot_p99": 80.0},
}
# The names before presets named their model (both were Llama-3.1-8B's limits, applied to any model): refused.
RETIRED_PRESETS = ("mlperf-server", "mlperf-interactive")
# What a preset does not apply of MLPerf's rules (the Result and docs/serve.md say so).
MLPERF_NOT_APPLIED = ("the 600 s minimum run and MLPerf's minimum query counts (a level runs --duration and "
                      "--min-iters)", "nearest-rank percentiles (ours interpolate between ranks)",
                      "the accuracy run and the dataset (prompts here are random, of fixed lengths)")
# A level meets an SLO only if at most this share of its requests failed (failed, cut and short alike).
SLO_MAX_ERROR_RATE = 0.01
# The ITL term of an SLO is judged on each request's largest gap, for a level (the statistic of those gaps) and
# for goodput (each request's own) alike; the pooled ITL in the tables is vLLM's figure and judges nothing.
ITL_RULE = "largest gap per request"
# The load client may be the limit when it keeps this share of a core busy, or when its p99 send lag is this
# share of the TTFT p50 (and at least CLIENT_LAG_FLOOR_MS).
CLIENT_BUSY_SHARE = 0.8
CLIENT_LAG_SHARE = 0.1
CLIENT_LAG_FLOOR_MS = 1.0
SLO_STATS = ("p50", "p90", "p99", "mean")
_SLO_TERM = re.compile(r"^(ttft|tpot|itl|e2e)_(p50|p90|p99|mean)\s*(?:<=|=)\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s)?$")


class SloError(ValueError):
    """An --slo text that does not parse; the message says which term and how to write it."""


@dataclass(frozen=True)
class Timeline:
    """When one generate call or one streamed request produced its tokens (host clock, seconds).

    ``token_times`` holds one stamp per decoding step (generate: a step yields a token for every row)
    or per content chunk (serve); ``output_tokens`` is N, counted by the workload (new tokens per row,
    or the server's ``usage.completion_tokens``).  ``error`` marks a failed request: it counts as an
    error and never in a latency figure.
    """

    start: float
    token_times: Tuple[float, ...]
    output_tokens: int
    prompt_tokens: int
    batch: int = 1
    error: Optional[str] = None
    end: Optional[float] = None  # the last token's stamp unless the call returned later (generate)
    scheduled: Optional[float] = None  # serve: when the load meant to send it (send lag = start - scheduled)

    def __post_init__(self) -> None:
        object.__setattr__(self, "token_times", tuple(self.token_times))

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.token_times)

    @property
    def finished(self) -> float:
        return self.end if self.end is not None else (self.token_times[-1] if self.token_times else self.start)


def ttft_s(tl: Timeline) -> Optional[float]:
    return tl.token_times[0] - tl.start if tl.token_times else None


def e2e_s(tl: Timeline) -> Optional[float]:
    return tl.finished - tl.start if tl.token_times else None


def tpot_s(tl: Timeline) -> Optional[float]:
    """(E2E - TTFT) / (N - 1): the time per output token after the first; None for N = 1."""
    first, whole = ttft_s(tl), e2e_s(tl)
    if first is None or whole is None or tl.output_tokens < 2:
        return None
    return (whole - first) / (tl.output_tokens - 1)


def itl_s(tl: Timeline) -> List[float]:
    """The gaps between consecutive tokens of this one call or request."""
    times = tl.token_times
    return [times[i + 1] - times[i] for i in range(len(times) - 1)]  # itertools.pairwise is 3.10+


def call_figures(tl: Timeline) -> Dict[str, Any]:
    """One call's figures (seconds and tokens/s), as a ``gen_call``-style event carries them."""
    first, whole, per_token = ttft_s(tl), e2e_s(tl), tpot_s(tl)
    decode = whole - first if whole is not None and first is not None else None
    return {
        "ttft_s": first, "tpot_s": per_token, "e2e_s": whole,
        "prefill_s": first, "decode_s": decode,
        "output_tokens": tl.output_tokens, "prompt_tokens": tl.prompt_tokens, "batch": tl.batch,
        "prefill_tok_s": _rate(tl.batch * tl.prompt_tokens, first),
        "decode_tok_s": _rate(tl.batch * (tl.output_tokens - 1), decode) if tl.output_tokens > 1 else None,
        "output_tok_s": _rate(tl.batch * tl.output_tokens, whole),
    }


def _rate(count: float, seconds: Optional[float]) -> Optional[float]:
    return count / seconds if seconds is not None and seconds > 0 else None


def distribution_ms(values_s: Sequence[float], interval: bool = True) -> Dict[str, Any]:
    """p50/p90/p99/mean (ms), the bootstrap 95% interval of the median (``interval``), n, and whether p99 rests on
    too few."""
    ms = [v * 1000.0 for v in values_s if v is not None]
    if not ms:
        return {"p50": None, "p90": None, "p99": None, "mean": None, "ci95": None, "n": 0, "p99_flag": None}
    ci = bootstrap_ci(ms) if interval else None
    return {"p50": percentile(ms, 50), "p90": percentile(ms, 90), "p99": percentile(ms, 99),
            "mean": statistics.fmean(ms), "ci95": list(ci) if ci else None, "n": len(ms),
            "p99_flag": None if len(ms) >= P99_MIN_VALUES else
            "p99 of %d values is their largest (it needs %d)" % (len(ms), P99_MIN_VALUES)}


def latency_distributions(timelines: Sequence[Timeline]) -> Dict[str, Dict[str, Any]]:
    """TTFT, TPOT, E2E per call; ITL pooled over the within-call gaps of every call."""
    done = [tl for tl in timelines if tl.ok]
    return {
        "ttft_ms": distribution_ms([ttft_s(tl) for tl in done]),  # type: ignore[misc]
        "tpot_ms": distribution_ms([t for t in (tpot_s(tl) for tl in done) if t is not None]),
        # No interval for pooled gaps: a request's gaps are not independent draws, and the bootstrap of a level's
        # 23,000 gaps took 10 CPU-s on the host the server runs on.
        "itl_ms": distribution_ms([gap for tl in done for gap in itl_s(tl)], interval=False),
        "e2e_ms": distribution_ms([e2e_s(tl) for tl in done]),  # type: ignore[misc]
    }


def largest_gap_s(tl: Timeline) -> Optional[float]:
    """A request's longest wait between two tokens: its value for an ITL term of an SLO (ITL_RULE)."""
    gaps = itl_s(tl)
    return max(gaps) if gaps else None


def from_scheduled(tl: Timeline) -> Timeline:
    """The request timed from when it was due, not from its send (MLPerf LoadGen: a late send is latency too)."""
    if tl.scheduled is None or tl.scheduled >= tl.start:
        return tl
    return Timeline(tl.scheduled, tl.token_times, tl.output_tokens, tl.prompt_tokens, tl.batch, tl.error, tl.end,
                    tl.scheduled)


def lag_ms(timelines: Sequence[Timeline]) -> Optional[Dict[str, float]]:
    """The send lag (start - scheduled) of every request that had a schedule: p50, p99 and max in ms."""
    lags = [max(0.0, tl.start - tl.scheduled) * 1000.0 for tl in timelines if tl.scheduled is not None]
    if not lags:
        return None
    return {"p50": percentile(lags, 50), "p99": percentile(lags, 99), "max": max(lags)}


def generate_summary(calls: Sequence[Timeline]) -> Dict[str, Any]:
    """One (batch, input, output) sweep point of ``generate``: latencies and the median call's rates."""
    done = [tl for tl in calls if tl.ok]
    figures = [call_figures(tl) for tl in done]
    summary: Dict[str, Any] = {"calls": len(done)}
    summary.update(latency_distributions(done))
    for rate in ("prefill_tok_s", "decode_tok_s", "output_tok_s"):
        values = [f[rate] for f in figures if f[rate] is not None]
        summary[rate] = statistics.median(values) if values else None
    return summary


def serve_summary(requests: Sequence[Timeline], slo: Optional[Dict[str, float]] = None, latency_from: str = "send",
                  client_cpu_s: Optional[float] = None, wall_s: Optional[float] = None,
                  max_error_rate: float = SLO_MAX_ERROR_RATE) -> Dict[str, Any]:
    """One load level of ``serve``: latency distributions, throughput over [first send, last response],
    errors and their rate, goodput (requests/s meeting every SLO term, each term read per request), and what the
    load client itself cost (its CPU over the level, ``client_cpu_s``, and each request's send lag).

    ``latency_from="scheduled"`` times every request from when it was due (MLPerf's rule), else from its send."""
    sent = list(requests)
    lag = lag_ms(sent)
    if latency_from == "scheduled":
        requests = [from_scheduled(tl) for tl in sent]
    done = [tl for tl in requests if tl.ok]
    summary: Dict[str, Any] = {"requests": len(requests), "completed": len(done),
                               "errors": len(requests) - len(done),
                               "error_rate": (len(requests) - len(done)) / len(requests) if requests else None,
                               "latency_from": latency_from}
    summary.update(latency_distributions(done))
    summary["itl_max_ms"] = distribution_ms([g for g in (largest_gap_s(tl) for tl in done) if g is not None],
                                            interval=False)
    window = max(tl.finished for tl in requests) - min(tl.start for tl in requests) if requests else 0.0
    out_tokens = sum(tl.output_tokens for tl in done)
    in_tokens = sum(tl.prompt_tokens for tl in done)
    summary.update(duration_s=window, requests_per_s=_rate(len(done), window),
                   output_tok_s=_rate(out_tokens, window), total_tok_s=_rate(out_tokens + in_tokens, window),
                   output_tokens=out_tokens, prompt_tokens=in_tokens)
    summary["client"] = {
        "cpu_s_per_request": client_cpu_s / len(sent) if client_cpu_s is not None and sent else None,
        "cpu_s": client_cpu_s,
        "cpu_share": client_cpu_s / wall_s if client_cpu_s is not None and wall_s else None,
        "send_lag_ms": lag,
    }
    if slo:
        good = sum(1 for tl in done if request_meets(tl, slo))
        met, misses = level_meets(summary, slo, max_error_rate)
        summary.update(good_requests=good, goodput_rps=_rate(good, window), slo_met=met, slo_misses=misses)
    return summary


def client_limit_sentence(level: Dict[str, Any]) -> Optional[str]:
    """A sentence when the load client, not the server, was likely the limit of a level (else None): it kept
    most of a core busy, or its sends ran late against the TTFT it measured."""
    client = level.get("client") or {}
    where = level_name(level)
    share = client.get("cpu_share")
    if share is not None and share >= CLIENT_BUSY_SHARE:
        return ("the load client kept %.0f%% of a CPU core busy at %s: it may have been the limit there, not the "
                "server (run the client on a host with more free cores, or lower the load)" % (100 * share, where))
    lag = (client.get("send_lag_ms") or {}).get("p99")
    ttft = (level.get("ttft_ms") or {}).get("p50")
    if lag is not None and ttft and lag >= CLIENT_LAG_FLOOR_MS and lag >= CLIENT_LAG_SHARE * ttft:
        return ("the load client sent late at %s (send lag p99 %.3g ms against a TTFT p50 of %.3g ms): it may have "
                "been the limit there, not the server" % (where, lag, ttft))
    return None


# ----------------------------------------------------------------------------- SLOs

def parse_slo(text: str) -> Dict[str, float]:
    """``"ttft_p99=2000ms,tpot_p99=100ms"`` (or a preset name) -> ``{"ttft_p99": 2000.0, "tpot_p99": 100.0}``
    in milliseconds."""
    text = (text or "").strip()
    if text in SLO_PRESETS:
        return dict(SLO_PRESETS[text])
    if text in RETIRED_PRESETS:
        scenario = text.split("-", 1)[1]
        raise SloError("%s was MLPerf's Llama-3.1-8B limits applied to any model; name the model whose limits you "
                       "mean: %s" % (text, ", ".join("%s (%s)" % (name, slo_text(limits))
                                                     for name, limits in SLO_PRESETS.items()
                                                     if name.endswith("-" + scenario))))
    terms: Dict[str, float] = {}
    for part in text.split(","):
        match = _SLO_TERM.match(part.strip().lower())
        if not match:
            raise SloError("SLO term %r is not METRIC_STAT=VALUE[ms|s] with METRIC one of %s and STAT one of %s "
                           "(e.g. ttft_p99=2000ms,tpot_p99=100ms), nor a preset (%s)"
                           % (part.strip(), "/".join(METRICS), "/".join(SLO_STATS), ", ".join(SLO_PRESETS)))
        metric, stat, value, unit = match.groups()
        ms = float(value) * (1000.0 if unit == "s" else 1.0)
        if ms <= 0:
            raise SloError("SLO term %r must be a positive time" % part.strip())
        terms["%s_%s" % (metric, stat)] = ms
    return terms


def slo_text(slo: Dict[str, float]) -> str:
    """The SLO as a user writes it: ``p99 TTFT ≤ 2000 ms, p99 TPOT ≤ 100 ms``."""
    return ", ".join("%s %s ≤ %g ms" % (key.split("_")[1], key.split("_")[0].upper(), value)
                     for key, value in sorted(slo.items()))


def request_meets(tl: Timeline, slo: Dict[str, float]) -> bool:
    """Goodput's test of one request: a failed request is never good; else each SLO metric's own value within
    its limit (the statistic is the level's; a request has one value per metric; ITL's is its largest gap)."""
    if not tl.ok:
        return False
    values = {"ttft": ttft_s(tl), "tpot": tpot_s(tl), "e2e": e2e_s(tl), "itl": largest_gap_s(tl)}
    for key, limit in slo.items():
        value = values[key.split("_")[0]]
        if value is not None and value * 1000.0 > limit:
            return False
    return True


def _slo_value(summary: Dict[str, Any], metric: str, stat: str) -> Optional[float]:
    if metric == "itl":  # ITL_RULE; runs stored before it have only the pooled gaps
        judged = summary.get("itl_max_ms")
        if judged is not None:
            return judged.get(stat)
    return (summary.get(metric + "_ms") or {}).get(stat)


def error_rate(summary: Dict[str, Any]) -> Optional[float]:
    """A level's share of failed requests (stored, or from its counts for runs stored before it was)."""
    if summary.get("error_rate") is not None:
        return float(summary["error_rate"])
    requests = summary.get("requests")
    return summary.get("errors", 0) / requests if requests else None


def level_meets(summary: Dict[str, Any], slo: Dict[str, float],
                max_error_rate: float = SLO_MAX_ERROR_RATE) -> Tuple[bool, List[str]]:
    """Whether a level meets every SLO term within the error bound, and a phrase per term missed: a level whose
    failed requests exceed ``max_error_rate`` never meets it, whatever its completed requests' latencies."""
    misses = []
    for key, limit in sorted(slo.items()):
        metric, stat = key.split("_")
        value = _slo_value(summary, metric, stat)
        if value is None:
            continue  # N = 1 has no TPOT: a term with nothing to read is not a miss
        if value > limit:
            misses.append("%s %s %.0f ms > %g ms" % (stat, metric.upper(), value, limit))
    rate = error_rate(summary)
    if rate is not None and rate > max_error_rate:
        misses.append("error rate %s > %s" % (_pct(rate), _pct(max_error_rate)))
    if summary.get("completed", 1) == 0:
        misses.append("no request completed")
    return (not misses, misses)


def _pct(share: float) -> str:
    return "%.3g%%" % (100.0 * share)


def is_mlperf(text: Optional[str]) -> bool:
    """Whether an --slo text names an MLPerf preset (latency then counts from the scheduled send)."""
    return (text or "").strip() in SLO_PRESETS


def preset_about(text: str) -> Optional[Dict[str, Any]]:
    """An MLPerf preset's name and what of MLPerf's rules it does not apply (None for other SLOs)."""
    name = (text or "").strip()
    if name not in SLO_PRESETS:
        return None
    return {"name": name, "limits": dict(SLO_PRESETS[name]), "latency_from": "scheduled",
            "not_applied": list(MLPERF_NOT_APPLIED)}


# ----------------------------------------------------------------------------- cost

def usd_per_1m_tokens(usd_per_hour: Optional[float], tokens_per_s: Optional[float]) -> Optional[float]:
    """$ per 1M tokens at a rate: $/h ÷ (3600 × tok/s) × 1e6 (None when either is unknown or zero)."""
    if usd_per_hour is None or not tokens_per_s or tokens_per_s <= 0:
        return None
    return usd_per_hour / (3600.0 * tokens_per_s) * 1e6


@dataclass
class TimelineRecorder:
    """Collects one call's token stamps: a generation hook (a StoppingCriteria) or an SSE reader calls
    ``token()`` each time new tokens are available."""

    clock: Any
    start: float = 0.0
    stamps: List[float] = field(default_factory=list)

    def begin(self) -> None:
        self.stamps = []
        self.start = self.clock()

    def token(self) -> None:
        self.stamps.append(self.clock())

    def timeline(self, output_tokens: int, prompt_tokens: int, batch: int = 1, error: Optional[str] = None,
                 end: Optional[float] = None) -> Timeline:
        return Timeline(self.start, tuple(self.stamps), output_tokens, prompt_tokens, batch, error, end)


# ----------------------------------------------------------------------------- serve: the operating point

def level_name(level: Dict[str, Any]) -> str:
    """``concurrency 4`` or ``2.5 requests/s (Poisson)``: how a sentence names one load level."""
    if level.get("rate") is not None:
        return "%.3g requests/s (Poisson)" % level["rate"]
    return "concurrency %s" % level.get("concurrency")


def goodput_point(levels: Sequence[Dict[str, Any]], slo: Optional[Dict[str, float]]) -> Optional[Dict[str, Any]]:
    """The level a cost is quoted at: with an SLO, the highest output tok/s among levels meeting it (None when
    none does); without one, the highest output tok/s measured (saturation)."""
    usable = [lv for lv in levels if lv.get("output_tok_s")]
    if slo:
        usable = [lv for lv in usable if level_meets(lv, slo)[0]]
    return max(usable, key=lambda lv: lv["output_tok_s"]) if usable else None


def slo_unmet_sentence(levels: Sequence[Dict[str, Any]], slo: Dict[str, float]) -> Optional[str]:
    """None when some level meets the SLO; else, per term missed everywhere, the best any level did:
    ``no load met p99 TTFT ≤ 500 ms; the lowest was 730 ms at concurrency 1``."""
    measured = [lv for lv in levels if lv.get("completed")]
    if any(level_meets(lv, slo)[0] for lv in measured):
        return None
    if not measured:
        return "no load met %s: no request completed" % slo_text(slo)
    parts = []
    for key, limit in sorted(slo.items()):
        metric, stat = key.split("_")
        values = [(_slo_value(lv, metric, stat), lv) for lv in measured]
        values = [(value, lv) for value, lv in values if value is not None]
        if not values or min(value for value, _ in values) <= limit:
            continue
        value, best = min(values, key=lambda pair: pair[0])
        parts.append("no load met %s %s ≤ %g ms; the lowest was %.0f ms at %s"
                     % (stat, metric.upper(), limit, value, level_name(best)))
    rates = [(error_rate(lv), lv) for lv in measured]
    rates = [(rate, lv) for rate, lv in rates if rate is not None]
    if rates and min(rate for rate, _ in rates) > SLO_MAX_ERROR_RATE:
        rate, best = min(rates, key=lambda pair: pair[0])
        parts.append("no load kept its errors within %s; the fewest were %s at %s"
                     % (_pct(SLO_MAX_ERROR_RATE), _pct(rate), level_name(best)))
    if not parts:  # every term is met somewhere, never all at once
        parts.append("no load met %s at once" % slo_text(slo))
    return "; ".join(parts)
