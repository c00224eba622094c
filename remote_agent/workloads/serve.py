"""The serve scenario: a server on the host, many streamed requests, the highest load that meets the SLO.

setup (resolve the server, write a random-weight model folder where one is needed) -> compile (launch,
readiness on /v1/models, the first request: server load kept apart, as compile is) -> for each (input,
output) shape: each concurrency level (a warm-up round excluded, then closed-loop until the level's rule
stops it) -> with an SLO, a seeded Poisson rate search -> the server stopped, whatever happened.

Every figure comes from remote_agent.llm_figures; one ``serve_level`` event per level feeds the live view.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Tuple

from remote_agent import llm_figures as figures
from remote_agent.eventlog import WorkerEvents
from remote_agent.protocol import DEFAULT_INPUT_LEN, DEFAULT_MODEL, DEFAULT_OUTPUT_LEN
from remote_agent.serving import argv as server_argv
from remote_agent.serving import load
from remote_agent.serving.client import Client
from remote_agent.serving.server import ServerError, ServerProcess, free_port, log_tail
from remote_agent.serving.sse import Endpoint, Request, RequestFailed, list_models, make_request
from remote_agent.workloads.problems import SpecProblem

DEFAULT_CONCURRENCY = (1, 2, 4)
READY_TIMEOUT_S = float(os.environ.get("NEURONBENCH_SERVER_READY_S", "1800"))  # vLLM Neuron compiles for long
RATE_PROBES = 4
# Request errors that the server caused (the client's own are short answers, bad prompts): these get the server
# log's cause appended.
SERVER_SIDE = ("error mid-stream", "answered HTTP 5", "closed mid-stream", "connection refused", "reset by peer",
               "did not answer", "stalled stream", "streamed no text",
               "the request to ")
SERVER_EXIT_WAIT_S = 1.0  # after a burst of failures, how long to wait to see whether the server process died
WARMUP_ROUNDS = 3  # a level's warm-up round is tried this many times before the server is called failing
LOG_LINES_PER_S = 20  # the server's lines streamed live a second (all of them stay in server.log)
# Words for prompts when the server's tokenizer is not at hand: each is one token in the common BPE vocabularies
# (with its leading space); the count is then corrected against usage.prompt_tokens.
_WORD_TEXT = ("the of and to in is was for on as with by at from that this which are be an or it not have "
              "one all were has but more can time two new first may other been its into only also after "
              "over most some there such made many these when any city world year part state during")
_WORDS = tuple(_WORD_TEXT.split())


class ServeFailure(Exception):
    def __init__(self, message: str, kind: str = "runtime") -> None:
        super().__init__(message)
        self.kind = kind


class Prompts:
    """Random prompts of S tokens: exact for the folders the agent writes; else words checked against usage."""

    def __init__(self, seed: int, vocab: Optional[int]) -> None:
        self.seed, self.vocab = seed, vocab
        self.words_for: Dict[int, int] = {}  # S -> words that made S tokens on this server
        self.checked: Dict[int, Optional[int]] = {}  # S -> usage.prompt_tokens of the calibration, None: unchecked

    def count_tokens(self) -> Optional[Callable[[str], int]]:
        if self.vocab is None:
            return None
        from remote_agent.serving.model_folder import count_tokens

        return count_tokens

    def text(self, tokens: int, index: int) -> str:
        seed = self.seed * 1000003 + index * 7919 + tokens
        if self.vocab is not None:
            from remote_agent.serving.model_folder import prompt_text

            return prompt_text(tokens, seed, self.vocab)
        import random

        rng = random.Random(seed)
        return " ".join(rng.choice(_WORDS) for _ in range(self.words_for.get(tokens, tokens)))

    def calibrate(self, client: Client, tokens: int) -> None:
        """Find how many words make ``tokens`` prompt tokens on this server (usage.prompt_tokens), 5 tries."""
        if self.vocab is not None or tokens in self.words_for:
            return
        words, seen = tokens, None
        for attempt in range(5):
            self.words_for[tokens] = words
            outcome = client.run(client.send(make_request(client.endpoint, self.text(tokens, -1 - attempt), tokens,
                                                          2)))
            seen = outcome.usage_prompt_tokens
            if seen is None or seen == tokens:
                break
            words = max(1, words + (tokens - seen) if abs(tokens - seen) < 8 else round(words * tokens / seen))
        self.checked[tokens] = seen


class Serve:
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

    # ------------------------------------------------------------------ setup
    def _model(self) -> Tuple[str, Optional[str], Optional[Dict[str, Any]]]:
        """(model source kind, name, model_file) of an hf: model; ('', None, None) when none was named."""
        model = self.spec.model or ""
        if model.startswith("hf:"):
            return "hf", model[3:], self.spec.model_file
        if model and model != DEFAULT_MODEL and (self.spec.endpoint or self.spec.server_cmd):
            return "id", model, None  # the model id as the running server names it (a multi-model endpoint)
        if model and model != DEFAULT_MODEL:
            raise SpecProblem("the serve workload serves an hf: model (a config, random weights), not %s: "
                              "give --model hf:ID or hf:./CONFIG_DIR, or measure a running server with --endpoint"
                              % model)
        return "", None, None

    def _folder(self, name: str, model_file: Optional[Dict[str, Any]], weights: bool) -> Tuple[str, Optional[int]]:
        """The folder to serve: the user's own (weights and all) as it is, or one written from the config."""
        from remote_agent.serving.model_folder import folder_vocab, write_model_folder

        if model_file is None and os.path.isdir(os.path.expanduser(name)):
            path = os.path.abspath(os.path.expanduser(name))
            if any(f.endswith((".safetensors", ".bin")) for f in os.listdir(path)):
                self.about["weights"] = "the folder's own (served as it is)"
                return path, folder_vocab(path)
        from remote_agent.workloads.sources.hf_config import load_config

        config, origin = load_config(name, model_file)
        self.about["config"] = origin
        folder = os.path.join(self.run_path, "model")
        os.makedirs(folder, exist_ok=True)
        if weights and self.spec.server == "vllm":
            # NxDI reads a checkpoint: drawn shard by shard in the config's dtype (an 8B model whole in fp32 would
            # not fit a small host's memory).
            from remote_agent.serving.model_folder import write_random_checkpoint

            self.about.update(write_model_folder(config, folder, self.spec.seed, weights=False))
            self.about.update(write_random_checkpoint(config, folder, self.spec.seed))
            return folder, folder_vocab(folder)
        # vLLM makes its own random weights (--load-format dummy): it reads only the config and the tokenizer.
        self.about.update(write_model_folder(config, folder, self.spec.seed, weights=weights))
        return folder, folder_vocab(folder)

    def start(self) -> Tuple[Endpoint, Prompts]:
        spec = self.spec
        kind, name, model_file = self._model()
        port = free_port()
        log_path = os.path.join(self.run_path, "server.log")
        vocab: Optional[int] = None
        if spec.endpoint:
            host, port, prefix = server_argv.parse_endpoint(spec.endpoint)
            self.about.update(server="endpoint", url=spec.endpoint)
            ids = self._models(host, port, prefix)
            model = name or self._only_model(ids)
            return Endpoint(host, port, model, "completions", "vllm", prefix), Prompts(spec.seed, None)
        if spec.server_cmd:
            argv = server_argv.server_cmd_argv(spec.server_cmd, port)
            self.about.update(server="command", argv=argv)
            self._launch(argv, port, log_path, {})
            ids = self._models("127.0.0.1", port, "/v1")
            model = name or self._only_model(ids)
            return Endpoint("127.0.0.1", port, model, "completions", "vllm"), Prompts(spec.seed, None)
        if kind != "hf" or name is None:
            raise SpecProblem("the serve workload needs a model: --model hf:ID or hf:./CONFIG_DIR (random weights), "
                              "or a running server with --endpoint")
        server = spec.server or "transformers"
        if server == "transformers":
            found = server_argv.transformers_serve()  # before the folder: an unfit host is told at once
            folder, vocab = self._folder(name, model_file, weights=True)
            device = "cuda" if _has_cuda() else "cpu"
            argv = server_argv.transformers_argv(sys.executable, port, device, found)
            self.about.update(server="transformers", transformers=found["version"], argv=argv, model_folder=folder,
                              device=device, api="completions" if found["api"] == "completions" else
                              "chat (transformers %s serves no /v1/completions)" % found["version"])
            # USE_TORCH_XLA off: transformers serve runs on cpu or cuda, and with it on, transformers and
            # accelerate import torch-xla wherever it is installed (backends/base.py says what that costs).
            # HF_HUB_DISABLE_UPDATE_CHECK: 5.x's CLI asks PyPI for a newer release at start; a benchmark does not.
            self._launch(argv, port, log_path, {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                                                "HF_HUB_DISABLE_UPDATE_CHECK": "1",
                                                "USE_TORCH_XLA": os.environ.get("USE_TORCH_XLA", "0")})
            return (Endpoint("127.0.0.1", port, folder, found["api"], "transformers"), Prompts(spec.seed, vocab))
        from remote_agent.probe import collect_env

        found = server_argv.findings(collect_env())  # not quick: the instance type (IMDS) picks the stack
        stack, install = server_argv.pick_vllm(found)
        model = name
        if stack == "nxdi":
            # The NxDI plugin loads the folder's checkpoint and ignores --load-format dummy (given a hub id it would
            # download the real weights): it gets a folder with random weights the agent wrote.
            model, vocab = self._folder(name, model_file, weights=True)
        elif model_file is not None:
            model, vocab = self._folder(name, model_file, weights=False)
        argv = server_argv.vllm_argv(stack, install["python"], model, port, self.input_lens, self.output_lens,
                                     self.concurrency, spec.nproc, spec.seed)
        env = server_argv.vllm_env(stack, _folder_config(model), max(s + n for s in self.input_lens
                                                                     for n in self.output_lens),
                                   max(self.concurrency), found.get("mem_available"))
        self.about.update(server="vllm", stack=stack, vllm=install.get("vllm"), argv=argv, family=found["family"])
        if install.get("dist"):
            self.about["vllm_dist"] = install["dist"]
        if env:
            self.about["env"] = env
        self._launch(argv, port, log_path, env)
        return Endpoint("127.0.0.1", port, model, "completions", "vllm"), Prompts(spec.seed, vocab)

    def _launch(self, argv: List[str], port: int, log_path: str, env: Dict[str, str]) -> None:
        self.server = ServerProcess(argv, port, log_path, env, cwd=self.run_path)
        self.server.start()
        threading.Thread(target=self._follow_log, args=(log_path,), name="server-log", daemon=True).start()
        self.events.emit("log", level="info", message="server started (pid %d): %s; its log is %s"
                         % (self.server.pid, " ".join(argv), log_path), pid=self.server.pid)
        self.about["ready_s"] = self.server.wait_ready(READY_TIMEOUT_S, self.cancelled.is_set)

    def _follow_log(self, path: str) -> None:
        """The server's output as live ``log`` events (a vLLM Neuron compile takes many minutes: the user sees it
        go), at most LOG_LINES_PER_S a second; every line stays in server.log."""
        sent, second = 0, int(time.monotonic())
        server = self.server
        with open(path, "rb") as handle:
            while server is not None:
                raw = handle.readline()
                if not raw:
                    if not server.alive():
                        return
                    time.sleep(0.2)
                    continue
                now = int(time.monotonic())
                if now != second:
                    second, sent = now, 0
                if sent < LOG_LINES_PER_S:
                    sent += 1
                    self.events.emit("log", level="stderr", message=raw.decode("utf-8", "replace").rstrip()[:2000])

    def server_said(self, error: Optional[str]) -> Optional[str]:
        """A request's error, with the cause from the log of the server this run started when the server failed it
        (vLLM streams only "EngineCore encountered an issue. See stack trace (above) for the root cause.")."""
        server = self.server
        if not error or server is None or not any(sign in error for sign in SERVER_SIDE):
            return error
        from remote_agent.serving.server import log_cause

        cause = log_cause(server.log_path)
        for _ in range(5):  # the engine's processes may still be writing their traceback when the stream ends
            if cause:
                break
            time.sleep(0.2)
            cause = log_cause(server.log_path)
        code = server.exit_code()
        if cause and cause not in error:
            error = "%s; the server's log says: %s" % (error, cause)
        if code is not None:
            error += " (the server has exited, with code %d)" % code
        return error

    def _models(self, host: str, port: int, prefix: str) -> List[str]:
        try:
            return list_models(host, port, prefix)
        except RequestFailed as exc:
            raise ServeFailure(str(exc), "bad_spec") from None

    def named_model(self, endpoint: Endpoint, prompts: Prompts) -> Prompts:
        """Checks a --model the user named for a running server (--endpoint, --server-cmd) against the ids it
        lists; and where the id is a model folder the agent wrote on this host (vLLM serving it by path), its
        prompts are made exact with its tokenizer, as for the servers the agent starts."""
        if not (self.spec.endpoint or self.spec.server_cmd):
            return prompts
        kind, name, _ = self._model()
        if kind == "id" and name is not None:
            ids = self._models(endpoint.host, endpoint.port, endpoint.prefix)
            if name not in ids:
                raise ServeFailure("the server lists %s, not %s: give --model one of the ids GET %s/models lists"
                                   % (", ".join(ids[:8]) or "no model", name, endpoint.prefix), "bad_spec")
        if prompts.vocab is None and os.path.isdir(endpoint.model):
            from remote_agent.serving.model_folder import folder_vocab

            vocab = folder_vocab(endpoint.model)
            if vocab is not None:
                return Prompts(self.spec.seed, vocab)
        return prompts

    def _only_model(self, ids: List[str]) -> str:
        if len(ids) == 1:
            return ids[0]
        raise ServeFailure("the server lists %s models (%s): name the one to measure with --model ID"
                           % (len(ids) or "no", ", ".join(ids[:8]) or "none"), "bad_spec")

    # ------------------------------------------------------------------- load
    @property
    def input_lens(self) -> List[int]:
        return list(self.spec.input_lens or (DEFAULT_INPUT_LEN,))

    @property
    def output_lens(self) -> List[int]:
        return list(self.spec.output_lens or (DEFAULT_OUTPUT_LEN,))

    @property
    def concurrency(self) -> List[int]:
        return list(self.spec.concurrency or DEFAULT_CONCURRENCY)

    def _maker(self, endpoint: Endpoint, prompts: Prompts, s: int, n: int) -> Callable[[int], Request]:
        def make(index: int) -> Request:
            return make_request(endpoint, prompts.text(s, index), s, n)
        return make

    def server_gone(self, where: Dict[str, Any]) -> Optional[str]:
        """None while the server this run started is up; once it has exited, the sentence saying so."""
        server = self.server
        if server is None or server.proc is None or server.alive():
            return None
        code = server.proc.returncode
        how = "was killed by signal %d" % -code if code is not None and code < 0 else "exited with code %s" % code
        return "the server %s during %s; its last log lines: %s" % (
            how, figures.level_name(where), log_tail(server.log_path) or "(none)")

    def died(self, where: Dict[str, Any]) -> Optional[str]:
        """After requests failed at once: the server's death sentence if it died (waiting up to SERVER_EXIT_WAIT_S
        for it: its port closes a moment before its process is seen gone), else None."""
        server = self.server
        if server is None or server.proc is None:
            return None
        try:
            server.proc.wait(timeout=SERVER_EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            return None
        return self.server_gone(where)

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


def _folder_config(model: str) -> Optional[Dict[str, Any]]:
    """The config.json of a model folder (None for a hub id or an unreadable file)."""
    try:
        with open(os.path.join(model, "config.json")) as handle:
            data = json.load(handle)
        return data if isinstance(data, dict) else None
    except (OSError, ValueError):
        return None


def _has_cuda() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:
        return False


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
