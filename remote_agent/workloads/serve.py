"""The serve scenario: a server on the host, many streamed requests, the highest load that meets the SLO.

setup (resolve the server, write a random-weight model folder where one is needed) -> compile (launch,
readiness on /v1/models, the first request: server load kept apart, as compile is) -> for each (input,
output) shape: each concurrency level (a warm-up round excluded, then closed-loop until the level's rule
stops it) -> with an SLO, a seeded Poisson rate search -> the server stopped, whatever happened.

Every figure comes from remote_agent.llm_figures; one ``serve_level`` event per level feeds the live view.
"""
from __future__ import annotations

import json
import signal
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from remote_agent import llm_figures as figures
from remote_agent.eventlog import WorkerEvents
from remote_agent.serving import argv as server_argv
from remote_agent.serving import load
from remote_agent.serving.client import Client
from remote_agent.serving.prompts import Prompts
from remote_agent.serving.server import ServerError, ServerProcess
from remote_agent.serving.sse import Endpoint, Request, make_request
from remote_agent.workloads.serve_server import ServeFailure, ServerSide

RATE_PROBES = 4
WARMUP_ROUNDS = 3  # a level's warm-up round is tried this many times before the server is called failing


class Serve(ServerSide):
    """A serve run: the server (``ServerSide``) and the load put on it, level by level."""

    def __init__(self, spec: Any, events: WorkerEvents, phase: Any, run_path: str) -> None:
        self.spec, self.events, self.phase, self.run_path = spec, events, phase, run_path
        self.cancelled = threading.Event()
        self.server: Optional[ServerProcess] = None
        self.warnings: List[str] = []
        self.levels: List[Dict[str, Any]] = []
        self.about: Dict[str, Any] = {}
        self.index = 0
        self.slo = figures.parse_slo(spec.slo) if spec.slo else None
        self.client: Optional[Client] = None

    def _maker(self, endpoint: Endpoint, prompts: Prompts, s: int, n: int) -> Callable[[int], Request]:
        def make(index: int) -> Request:
            return make_request(endpoint, prompts.text(s, index), s, n)
        return make

    def _warm_up(self, client: Client, make: Callable[[int], Request], where: Dict[str, Any], clients: int,
                 abort: Callable[[], Optional[str]]) -> Tuple[int, int]:
        """One request per client, left out of the figures; a round in which every request failed is tried again
        (WARMUP_ROUNDS in all) before the server is called failing.  (requests sent, of them failed)."""
        sent = failed = 0
        first_error = None
        for _ in range(WARMUP_ROUNDS):
            warm = load.closed_loop(client, make, clients, load.LevelRule(clients, 0.0, None, clients),
                                    self.cancelled, first_index=self.index, abort=abort)
            self.index = warm.next_index
            if warm.abort_reason:
                raise ServeFailure(warm.abort_reason)
            sent += len(warm.outcomes)
            failed += warm.errors
            first_error = first_error or warm.first_error()
            if self.cancelled.is_set() or warm.errors < len(warm.outcomes):
                break
        else:
            raise ServeFailure(self.died(where) or "every warm-up request at %s failed, in %d rounds of %d: %s" % (
                figures.level_name(where), WARMUP_ROUNDS, clients, self.server_said(first_error)))
        if failed:
            self.warnings.append("%s: %d of %d warm-up requests failed (first: %s); they are left out of the "
                                 "figures like the rest of the warm-up"
                                 % (figures.level_name(where), failed, sent, first_error))
        return sent, failed

    def _level(self, client: Client, make: Callable[[int], Request], s: int, n: int, concurrency: Optional[int],
               rate: Optional[float]) -> Dict[str, Any]:
        spec = self.spec
        where: Dict[str, Any] = {"input_len": s, "output_len": n}
        where.update({"concurrency": concurrency} if rate is None else {"rate": rate})

        def abort() -> Optional[str]:
            return self.server_gone(where)

        self.events.emit("phase", name="warmup", state="start", **where)
        opened = client.opened
        warm_sent, warm_failed = self._warm_up(client, make, where, concurrency or 1, abort)
        self.events.emit("phase", name="warmup", state="end", **where)
        self.events.emit("phase", name="measure", state="start", **where)
        rule = load.LevelRule(spec.min_iters, spec.duration, spec.target_ci)
        if rate is None:
            level = load.closed_loop(client, make, concurrency or 1, rule, self.cancelled, first_index=self.index,
                                     abort=abort)
            in_flight = concurrency
        else:
            level, in_flight = load.open_loop(client, make, rate, rule, spec.seed, self.cancelled,
                                              first_index=self.index, abort=abort)
        self.index = level.next_index
        self.events.emit("phase", name="measure", state="end", **where)
        if level.stopped_by == "errors" and not level.abort_reason:
            level.abort_reason = self.died(where)  # its requests failed the moment it died: say why, not how many
        if level.abort_reason:
            # The levels measured so far are kept (the Result keeps self.levels); this one's figures are not.
            raise ServeFailure(level.abort_reason)
        summary = figures.serve_summary([o.timeline for o in level.outcomes], self.slo,
                                        latency_from=self.latency_from, client_cpu_s=level.cpu_s,
                                        wall_s=level.wall_s)
        summary.update(where, stopped_by=level.stopped_by, max_in_flight=in_flight,
                       short=sum(1 for o in level.outcomes if o.short),
                       token_source=_most([o.token_source for o in level.outcomes if o.token_source]),
                       first_error=self.server_said(level.first_error()), warmup_requests=warm_sent,
                       warmup_errors=warm_failed)
        summary["client"]["connections_opened"] = client.opened - opened  # by its warm-up and itself
        prompt_seen = [o.usage_prompt_tokens for o in level.outcomes if o.usage_prompt_tokens is not None]
        off = [p for p in prompt_seen if p != s]
        summary["prompt_tokens_checked"] = len(prompt_seen)
        summary["prompt_tokens_off"] = len(off)
        if off:
            self.warnings.append("%s: %d of %d requests had a prompt of %d to %d tokens, not %d (usage.prompt_tokens)"
                                 % (figures.level_name(where), len(off), len(prompt_seen), min(off), max(off), s))
        if summary["errors"]:
            self.warnings.append("%s: %d of %d requests failed (first: %s)" % (
                figures.level_name(where), summary["errors"], summary["requests"], summary["first_error"]))
        limit = figures.client_limit_sentence(summary)
        if limit:
            self.warnings.append(limit)
        self.levels.append(summary)
        self.events.emit("serve_level", level=_event_level(summary))
        if level.stopped_by == "errors":
            raise ServeFailure("%d of %d requests at %s failed, so the run stopped; the first: %s" % (
                summary["errors"], summary["requests"], figures.level_name(where), summary["first_error"]))
        return summary

    def sweep(self, client: Client, prompts: Prompts) -> None:
        endpoint = client.endpoint
        for s in self.input_lens:
            for n in self.output_lens:
                prompts.calibrate(client, s)
                if prompts.checked.get(s) not in (None, s):
                    self.warnings.append("prompts of %d tokens came out as %d tokens on this server (usage), the "
                                         "nearest the client could make them" % (s, prompts.checked[s]))
                make = self._maker(endpoint, prompts, s, n)
                shape = []
                for c in self.concurrency:
                    if self.cancelled.is_set():
                        return
                    shape.append(self._level(client, make, s, n, c, None))
                if self.slo and not self.cancelled.is_set():
                    self._rate_search(client, make, s, n, shape)

    def _rate_search(self, client: Client, make: Callable[[int], Request], s: int, n: int,
                     shape: List[Dict[str, Any]]) -> None:
        assert self.slo is not None
        ceiling = max((lv.get("requests_per_s") or 0.0) for lv in shape)
        meeting = [lv.get("requests_per_s") or 0.0 for lv in shape if figures.level_meets(lv, self.slo)[0]]
        if not meeting:
            # Even the lightest closed-loop load missed it: a Poisson stream at any rate is no lighter than one
            # request at a time, so there is no rate to find.
            self.warnings.append("%d in / %d out: no rate search, since the lightest load (%s) already missed the "
                                 "SLO" % (s, n, figures.level_name(shape[0])))
            return
        tried: List[Tuple[float, bool]] = []
        while not self.cancelled.is_set():
            rate = load.next_rates(tried, ceiling, RATE_PROBES, max(meeting))
            if rate is None:
                break
            summary = self._level(client, make, s, n, None, round(rate, 4))
            tried.append((rate, figures.level_meets(summary, self.slo)[0]))

    # ------------------------------------------------------------------- main
    @property
    def latency_from(self) -> str:
        """``scheduled`` under the MLPerf presets (LoadGen's rule: a late send is the system's latency too),
        ``send`` otherwise (vLLM's and AIPerf's)."""
        return "scheduled" if figures.is_mlperf(self.spec.slo) else "send"

    def outcome(self) -> Dict[str, Any]:
        point = figures.goodput_point(self.levels, self.slo)
        return {
            "server": self.about,
            "slo": self.slo,
            "slo_text": figures.slo_text(self.slo) if self.slo else None,
            "slo_max_error_rate": figures.SLO_MAX_ERROR_RATE,
            "slo_preset": figures.preset_about(self.spec.slo) if self.spec.slo else None,
            "latency_from": self.latency_from,
            "itl_rule": figures.ITL_RULE,
            "levels": self.levels,
            "goodput_point": None if point is None else {
                key: point.get(key) for key in ("input_len", "output_len", "concurrency", "rate", "requests_per_s",
                                                "goodput_rps", "output_tok_s", "total_tok_s", "error_rate")},
            "operating_point": "goodput" if self.slo else "saturation",
            "slo_unmet": figures.slo_unmet_sentence(self.levels, self.slo) if self.slo else None,
        }


def _most(values: List[str]) -> Optional[str]:
    return max(set(values), key=values.count) if values else None


def _event_level(summary: Dict[str, Any]) -> Dict[str, Any]:
    """A level as the live view needs it (the distributions without their intervals)."""
    out = {}
    for key, value in summary.items():
        if isinstance(value, dict) and key != "client":
            value = {k: v for k, v in value.items() if k in ("p50", "p90", "p99", "mean", "n")}
        out[key] = value
    return out


def run_serve(spec: Any, events: WorkerEvents, summary_path: str, phase: Any, run_path: str) -> int:
    """The serve workload in this process (the supervisor's only launch for serve); its exit code."""
    try:
        serve = Serve(spec, events, phase, run_path)
    except figures.SloError as exc:
        events.emit("error", kind="bad_spec", message="--slo: %s" % exc, detail="")
        return 1

    def on_stop(_signum: int, _frame: Any) -> None:
        serve.cancelled.set()  # the clients stop after their request; the server is stopped below

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    failure: Optional[BaseException] = None
    try:
        phase.name = "setup"
        events.emit("phase", name="setup", state="start")
        events.emit("phase", name="setup", state="end", backend="serve")
        phase.name = "compile"
        events.emit("phase", name="compile", state="start")
        started = time.perf_counter()
        try:
            endpoint, prompts = serve.start()
        except ServerError as exc:
            raise ServeFailure(str(exc), exc.kind) from None
        except server_argv.ServeProblem as exc:
            raise ServeFailure(str(exc), "backend_unavailable" if "install" in str(exc) or "venv" in str(exc)
                               else "bad_spec") from None
        prompts = serve.named_model(endpoint, prompts)
        client = serve.client = Client(endpoint, prompts.count_tokens())
        s = min(serve.input_lens)
        first = client.run(client.send(make_request(endpoint, prompts.text(s, -100), s, 2)))
        if first.timeline.error and not first.short:
            gone = serve.server_gone({"concurrency": None})
            if gone:
                raise ServeFailure(gone.replace("during concurrency None", "at its first request"))
            raise ServeFailure("the server's first request failed: %s" % serve.server_said(first.timeline.error),
                               "bad_spec" if "OpenAI" in first.timeline.error or "stream" in first.timeline.error
                               else "runtime")
        serve.about["first_request_s"] = first.timeline.finished - first.timeline.start
        serve.about["endpoint"] = endpoint.url()
        serve.about["model"] = endpoint.model
        serve.about["dialect"] = endpoint.dialect
        load_s = time.perf_counter() - started
        serve.about["load_s"] = load_s
        events.emit("phase", name="compile", state="end", seconds=load_s)
        phase.name = "measure"
        serve.sweep(client, prompts)
    except BaseException as exc:
        failure = exc
    finally:
        if serve.client is not None:
            serve.client.close()
        if serve.server is not None:
            code = serve.server.stop()
            events.emit("log", level="info", message="server stopped (pid %d, exit %s)" % (serve.server.pid, code))
            serve.about["log"] = serve.server.log_path
        with open(summary_path, "w") as handle:
            json.dump({"serve": serve.outcome(), "warnings": serve.warnings,
                       "backend": {"name": "serve", "server": serve.about.get("server")}}, handle)
    if isinstance(failure, ServeFailure):
        log = serve.server.log_path if serve.server is not None else None
        events.emit("error", kind=failure.kind, message=str(failure),
                    detail="server log: %s" % log if log else "")
        return 1
    if failure is not None:
        raise failure
    return 0
