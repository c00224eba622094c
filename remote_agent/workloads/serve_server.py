"""The serve scenario's server side: which server, its model folder, its start and readiness, its log, its death.

``ServerSide`` is the half of ``Serve`` (remote_agent/workloads/serve.py) that owns the server process: it resolves
``--model``/``--server``/``--server-cmd``/``--endpoint`` into a running OpenAI endpoint, streams the server's log
as live ``log`` events, and turns what the server wrote into the sentence a user reads when a request, a warm-up
or the whole server fails.  The load side (levels, warm-up, rate search, figures) is ``Serve`` itself.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from remote_agent import llm_figures as figures
from remote_agent.eventlog import WorkerEvents
from remote_agent.protocol import DEFAULT_INPUT_LEN, DEFAULT_MODEL, DEFAULT_OUTPUT_LEN
from remote_agent.serving import argv as server_argv
from remote_agent.serving.client import Client
from remote_agent.serving.prompts import Prompts
from remote_agent.serving.server import ServerProcess, free_port, log_tail
from remote_agent.serving.sse import Endpoint, RequestFailed, list_models
from remote_agent.workloads.problems import SpecProblem

DEFAULT_CONCURRENCY = (1, 2, 4)
READY_TIMEOUT_S = float(os.environ.get("NEURONBENCH_SERVER_READY_S", "1800"))  # vLLM Neuron compiles for long
# Request errors that the server caused (the client's own are short answers, bad prompts): these get the server
# log's cause appended.
SERVER_SIDE = ("error mid-stream", "answered HTTP 5", "closed mid-stream", "connection refused", "reset by peer",
               "did not answer", "stalled stream", "streamed no text",
               "the request to ")
SERVER_EXIT_WAIT_S = 1.0  # after a burst of failures, how long to wait to see whether the server process died
LOG_LINES_PER_S = 20  # the server's lines streamed live a second (all of them stay in server.log)


class ServeFailure(Exception):
    def __init__(self, message: str, kind: str = "runtime") -> None:
        super().__init__(message)
        self.kind = kind


class ServerSide:
    """The server of a serve run (a mixin of ``Serve``, which sets these attributes in its ``__init__``)."""

    spec: Any
    events: WorkerEvents
    run_path: str
    cancelled: threading.Event
    server: Optional[ServerProcess]
    about: Dict[str, Any]
    client: Optional[Client]

    @property
    def input_lens(self) -> List[int]:
        return list(self.spec.input_lens or (DEFAULT_INPUT_LEN,))

    @property
    def output_lens(self) -> List[int]:
        return list(self.spec.output_lens or (DEFAULT_OUTPUT_LEN,))

    @property
    def concurrency(self) -> List[int]:
        return list(self.spec.concurrency or DEFAULT_CONCURRENCY)

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
