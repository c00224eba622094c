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
# MLPerf Inference's llama3.1-8b limits (ms), the presets of --slo (research/llm-serving.md §1).
SLO_PRESETS = {
    "mlperf-server": {"ttft_p99": 2000.0, "tpot_p99": 100.0},
    "mlperf-interactive": {"ttft_p99": 500.0, "tpot_p99": 30.0},
}
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


def distribution_ms(values_s: Sequence[float]) -> Dict[str, Any]:
    """p50/p90/p99/mean (ms), the bootstrap 95% interval of the median, n, and whether p99 rests on too few."""
    ms = [v * 1000.0 for v in values_s if v is not None]
    if not ms:
        return {"p50": None, "p90": None, "p99": None, "mean": None, "ci95": None, "n": 0, "p99_flag": None}
    ci = bootstrap_ci(ms)
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
        "itl_ms": distribution_ms([gap for tl in done for gap in itl_s(tl)]),
        "e2e_ms": distribution_ms([e2e_s(tl) for tl in done]),  # type: ignore[misc]
    }


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


def serve_summary(requests: Sequence[Timeline], slo: Optional[Dict[str, float]] = None) -> Dict[str, Any]:
    """One load level of ``serve``: latency distributions, throughput over [first send, last response],
    errors, and goodput (requests/s meeting every SLO term, each term read per request)."""
    done = [tl for tl in requests if tl.ok]
    summary: Dict[str, Any] = {"requests": len(requests), "completed": len(done),
                               "errors": len(requests) - len(done)}
    summary.update(latency_distributions(done))
    window = max(tl.finished for tl in requests) - min(tl.start for tl in requests) if requests else 0.0
    out_tokens = sum(tl.output_tokens for tl in done)
    in_tokens = sum(tl.prompt_tokens for tl in done)
    summary.update(duration_s=window, requests_per_s=_rate(len(done), window),
                   output_tok_s=_rate(out_tokens, window), total_tok_s=_rate(out_tokens + in_tokens, window),
                   output_tokens=out_tokens, prompt_tokens=in_tokens)
    if slo:
        good = sum(1 for tl in done if request_meets(tl, slo))
        summary.update(good_requests=good, goodput_rps=_rate(good, window),
                       slo_met=level_meets(summary, slo)[0], slo_misses=level_meets(summary, slo)[1])
    return summary


# ----------------------------------------------------------------------------- SLOs

def parse_slo(text: str) -> Dict[str, float]:
    """``"ttft_p99=2000ms,tpot_p99=100ms"`` (or a preset name) -> ``{"ttft_p99": 2000.0, "tpot_p99": 100.0}``
    in milliseconds."""
    text = (text or "").strip()
    if text in SLO_PRESETS:
        return dict(SLO_PRESETS[text])
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
    """Goodput's test of one request: each SLO metric's own value within its limit (the statistic is the
    level's; a request has one value per metric; ITL's is its largest gap)."""
    values = {"ttft": ttft_s(tl), "tpot": tpot_s(tl), "e2e": e2e_s(tl),
              "itl": max(itl_s(tl)) if len(tl.token_times) > 1 else None}
    for key, limit in slo.items():
        value = values[key.split("_")[0]]
        if value is not None and value * 1000.0 > limit:
            return False
    return tl.ok


def level_meets(summary: Dict[str, Any], slo: Dict[str, float]) -> Tuple[bool, List[str]]:
    """Whether a level's distributions meet every SLO term, and a phrase per term missed."""
    misses = []
    for key, limit in sorted(slo.items()):
        metric, stat = key.split("_")
        value = (summary.get(metric + "_ms") or {}).get(stat)
        if value is None:
            continue  # N = 1 has no TPOT: a term with nothing to read is not a miss
        if value > limit:
            misses.append("%s %s %.0f ms > %g ms" % (stat, metric.upper(), value, limit))
    if summary.get("completed", 1) == 0:
        misses.append("no request completed")
    return (not misses, misses)


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
        values = [((lv.get(metric + "_ms") or {}).get(stat), lv) for lv in measured]
        values = [(value, lv) for value, lv in values if value is not None]
        if not values or min(value for value, _ in values) <= limit:
            continue
        value, best = min(values, key=lambda pair: pair[0])
        parts.append("no load met %s %s ≤ %g ms; the lowest was %.0f ms at %s"
                     % (stat, metric.upper(), limit, value, level_name(best)))
    if not parts:  # every term is met somewhere, never all at once
        parts.append("no load met %s at once" % slo_text(slo))
    return "; ".join(parts)
