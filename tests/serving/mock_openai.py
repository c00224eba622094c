"""A stdlib OpenAI-compatible streaming server with set timings, for the serve workload's tests (GuideLLM's habit).

It keeps the rules of the servers it stands in for (vLLM's OpenAI server): ``/v1/models`` lists the model;
``/v1/completions`` and ``/v1/chat/completions`` stream SSE ``data:`` chunks, one token each, after ``ttft``
seconds and then every ``itl`` seconds, end with ``[DONE]``; ``stream_options.include_usage`` adds a usage chunk
(prompt tokens = the prompt's words, or its characters for the one-character tokenizer the agent writes);
``max_tokens`` is the length, and without ``ignore_eos``/``min_tokens`` a request may stop early at "EOS"
(``eos_after``), as a real model does.

Modes (``--mode``): ok, error (HTTP 500), no_usage, short (stops after ``short`` tokens despite ignore_eos),
dropped (closes the connection after ``short`` tokens), mid_error (an error chunk after ``short`` tokens),
not_openai (404 for every path), no_stream (a JSON answer, never SSE), die (exits at start: a failed launch),
oom (exits at start with CUDA's out-of-memory line).  Settings beside the mode: ``fail_every`` (every Nth
POST answers HTTP 500, the rest stream), ``fail_after`` (every POST after the Nth answers HTTP 500), ``gate`` (the
first streamed requests wait until that many are in flight at once, so a client that sends fewer at once stalls:
``gate_timeouts`` counts the waits that gave up), ``exit_after`` (the process exits with ``exit_code`` on that
POST: a server dying mid-level), ``also_models`` (more ids listed), ``close_after`` (each connection closed after
its answer without a word); ``connections`` counts the TCP connections the server accepted.

Run as a script (``python mock_openai.py --port N ...``) it is a server a ``--server-cmd`` launches.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))  # as a script
from remote_agent.serving.char_tokens import count_tokens

MODEL = "mock/model"


class Settings:
    def __init__(self, ttft: float = 0.02, itl: float = 0.005, mode: str = "ok", short: int = 2,
                 eos_after: int | None = None, model: str = MODEL, fail_every: int = 0, gate: int = 0,
                 exit_after: int = 0, exit_code: int = 25, also_models: tuple = (), fail_after: int = 0) -> None:
        self.ttft, self.itl, self.mode, self.short = ttft, itl, mode, short
        self.eos_after, self.model = eos_after, model
        self.also_models = tuple(also_models)  # more ids /v1/models lists (a multi-model endpoint)
        self.fail_every, self.gate, self.exit_after, self.exit_code = fail_every, gate, exit_after, exit_code
        self.fail_after = fail_after  # every POST after this many answers HTTP 500
        self.in_flight = 0
        self.most_in_flight = 0
        self.requests = 0
        self.connections = 0
        self.gate_timeouts = 0
        self.gate_open = not gate
        self.close_after = False  # close each connection after its answer, without saying so first
        self.bodies: list = []
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    settings: Settings

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        with self.settings.lock:
            self.settings.connections += 1

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.settings.mode == "not_openai" or self.path != "/v1/models":
            self._json(404, {"detail": "Not Found"})
            return
        ids = (self.settings.model,) + self.settings.also_models
        self._json(200, {"object": "list", "data": [{"id": name, "object": "model"} for name in ids]})

    def do_POST(self) -> None:
        s = self.settings
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with s.lock:
            s.requests += 1
            s.bodies.append(body)
            number = s.requests
        if s.exit_after and number >= s.exit_after:
            print(f"the mock exits on request {number}, on purpose", flush=True)
            os._exit(s.exit_code)
        if (s.fail_every and number % s.fail_every == 0) or (s.fail_after and number > s.fail_after):
            self._json(500, {"error": {"message": f"the mock failed request {number} on purpose"}})
            return
        if s.mode == "not_openai" or self.path not in ("/v1/completions", "/v1/chat/completions"):
            self._json(404, {"detail": "Not Found"})
            return
        if s.mode == "error":
            self._json(500, {"error": {"message": "the mock failed on purpose"}})
            return
        if s.mode == "no_stream":
            self._json(200, {"choices": [{"text": "a b c"}]})
            return
        with s.lock:
            s.in_flight += 1
            s.most_in_flight = max(s.most_in_flight, s.in_flight)
            s.changed.notify_all()
            if s.in_flight >= s.gate:
                s.gate_open = True
            if not s.gate_open and not s.changed.wait_for(lambda: s.gate_open, timeout=10.0):
                s.gate_timeouts += 1
        self._counted = True
        try:
            self._stream(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client read [DONE] and closed before the chunked body's last empty chunk: that is fine
        finally:
            self._leave()

    def _leave(self) -> None:
        # A request stops counting as in flight before its [DONE] goes out: the client may send its next
        # request the moment it reads [DONE], and counting until this thread's own cleanup would see c + 1.
        if getattr(self, "_counted", False):
            self._counted = False
            with self.settings.lock:
                self.settings.in_flight -= 1

    def _chunk(self, payload: Any) -> None:
        data = ("data: %s\n\n" % (payload if isinstance(payload, str) else json.dumps(payload))).encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(self, body: dict[str, Any]) -> None:
        s = self.settings
        chat = self.path.endswith("/chat/completions")
        prompt = body["messages"][-1]["content"] if chat else body.get("prompt", "")
        wanted = int(body.get("max_tokens") or 16)
        exact = bool(body.get("ignore_eos")) or int(body.get("min_tokens") or 0) >= wanted
        count = wanted if exact or s.eos_after is None else min(wanted, s.eos_after)
        if s.mode in ("short", "dropped", "mid_error"):
            count = min(count, s.short)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if chat:  # a role chunk first, before any token (as vLLM and transformers serve do)
            self._chunk({"choices": [{"index": 0, "delta": {"role": "assistant"}}]})
        time.sleep(s.ttft)
        for i in range(count):
            if i:
                time.sleep(s.itl)
            piece = f" t{i}"
            choice = {"index": 0, "delta": {"content": piece}} if chat else {"index": 0, "text": piece}
            if i == count - 1 and s.mode not in ("dropped", "mid_error"):
                choice["finish_reason"] = "length"
            self._chunk({"choices": [choice]})
        if s.mode == "dropped":
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)  # no terminating chunk: the client sees the stream cut
            return
        if s.mode == "mid_error":
            self._chunk({"error": {"message": "engine died", "code": 500}})
        elif (body.get("stream_options") or {}).get("include_usage") and s.mode != "no_usage":
            # The tokenizer the agent writes makes one token a character; other prompts count by words.
            tokens = count_tokens(str(prompt)) or len(str(prompt).split())
            self._chunk({"choices": [], "usage": {"prompt_tokens": tokens, "completion_tokens": count,
                                                  "total_tokens": tokens + count}})
        self._leave()
        self._chunk("[DONE]")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if s.close_after:
            self.close_connection = True


class Server(ThreadingHTTPServer):
    request_queue_size = 256  # the listen backlog: 5 by default, which makes a burst of connects wait a second
    daemon_threads = True


class MockServer:
    """``with MockServer(ttft=..., itl=...) as mock:`` a server on 127.0.0.1 in a thread."""

    def __init__(self, **settings: Any) -> None:
        self.settings = Settings(**settings)
        handler = type("BoundHandler", (Handler,), {"settings": self.settings})
        self.httpd = Server(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> MockServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: list | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--ttft", type=float, default=0.02)
    parser.add_argument("--itl", type=float, default=0.005)
    parser.add_argument("--mode", default="ok")
    parser.add_argument("--short", type=int, default=2)
    parser.add_argument("--startup", type=float, default=0.0, help="seconds before it listens")
    parser.add_argument("--child", action="store_true", help="also start a child process that sleeps (a worker)")
    parser.add_argument("--fail-every", type=int, default=0)
    parser.add_argument("--fail-after", type=int, default=0)
    parser.add_argument("--exit-after", type=int, default=0, help="exit on this POST (a server dying mid-level)")
    parser.add_argument("--exit-code", type=int, default=25)
    args = parser.parse_args(argv)
    print(f"mock server pid {os.getpid()} starting on port {args.port}", flush=True)
    if args.mode == "die":
        print("RuntimeError: the mock refuses to start, on purpose", flush=True)
        return 3
    if args.mode == "oom":
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
        return 1
    if args.child:
        import subprocess

        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    time.sleep(args.startup)
    settings = Settings(args.ttft, args.itl, args.mode, args.short, fail_every=args.fail_every,
                        exit_after=args.exit_after, exit_code=args.exit_code, fail_after=args.fail_after)
    handler = type("BoundHandler", (Handler,), {"settings": settings})
    httpd = Server(("127.0.0.1", args.port), handler)
    httpd.daemon_threads = True
    print("listening", flush=True)
    httpd.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
