"""One streamed request to an OpenAI-compatible server: what is sent, how its SSE answer is read, what it means.

vLLM's ``endpoint_request_func.py`` habit: one request gives a plain record of timestamps; every figure is
computed afterwards by ``remote_agent.llm_figures``.  The bytes travel over ``remote_agent.serving.client``
(one asyncio event loop, kept-alive HTTP/1.1 connections); this module knows the OpenAI stream, not sockets.

- A chunk counts as a token's arrival when it carries text (``choices[0].text`` or ``choices[0].delta.content``):
  a role-only first chunk, which chat servers send before generating anything, is not a first token.
- SSE as the spec writes it: ``data:`` lines up to a blank line make one event; ``:`` lines are comments
  (``: ping``), other fields are ignored; lines may end in ``\\r\\n``.  An event is decoded once, as bytes.
- Output tokens come from the stream's ``usage`` (asked for with ``stream_options.include_usage``), or, where a
  server sends none, from a counter of the model's tokens the caller supplies (``token_source`` says which).
  A request returning fewer than N tokens is marked short: an error, never a fast figure (DESIGN.md §11).
"""
from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from remote_agent.llm_figures import Timeline

APIS = ("completions", "chat")
# How a server is asked for exactly N tokens:
#  vllm         ignore_eos + min_tokens (vLLM, SGLang, and servers that accept vLLM's extra fields)
#  transformers transformers serve's own ``generation_config`` field (4.56 refuses unknown keys with 422)
#  openai       max_tokens only (a server that knows neither; a request short of N is then flagged)
DIALECTS = ("vllm", "transformers", "openai")
_decode = json.JSONDecoder().raw_decode


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and how they are written."""

    host: str
    port: int
    model: str
    api: str = "completions"
    dialect: str = "vllm"
    prefix: str = "/v1"
    timeout_s: float = 120.0  # no byte from the server for this long: the request failed

    @property
    def path(self) -> str:
        return self.prefix + ("/completions" if self.api == "completions" else "/chat/completions")

    def url(self) -> str:
        return "http://%s:%d%s" % (self.host, self.port, self.path)


@dataclass
class Outcome:
    """One request: its timeline (figures) and what the client noticed."""

    timeline: Timeline
    short: bool = False  # fewer than N tokens came back
    token_source: Optional[str] = None  # "usage" or "tokenizer"
    usage_prompt_tokens: Optional[int] = None
    text: str = ""
    ended: Optional[float] = None  # when the client had the whole answer (the closed loop's next send is due)
    aborted: bool = False  # the client gave it up (the level was cancelled or the server died): no figure


@dataclass(frozen=True)
class Request:
    """One request made ahead of its send: the HTTP bytes and what the answer is checked against."""

    data: bytes
    prompt_tokens: int
    output_tokens: int


def request_body(endpoint: Endpoint, prompt: str, output_tokens: int) -> Dict[str, Any]:
    body: Dict[str, Any] = {"model": endpoint.model, "stream": True, "max_tokens": output_tokens,
                            "temperature": 0.0, "stream_options": {"include_usage": True}}
    if endpoint.api == "completions":
        body["prompt"] = prompt
    else:
        body["messages"] = [{"role": "user", "content": prompt}]
    if endpoint.dialect == "vllm":
        body.update(ignore_eos=True, min_tokens=output_tokens)
    elif endpoint.dialect == "transformers":
        body["generation_config"] = json.dumps({"max_new_tokens": output_tokens, "min_new_tokens": output_tokens,
                                                "do_sample": False, "eos_token_id": None})
    return body


def make_request(endpoint: Endpoint, prompt: str, prompt_tokens: int, output_tokens: int) -> Request:
    """The whole HTTP/1.1 request, ready to write (keep-alive is HTTP/1.1's default)."""
    body = json.dumps(request_body(endpoint, prompt, output_tokens), separators=(",", ":")).encode("utf-8")
    host = "[%s]" % endpoint.host if ":" in endpoint.host else endpoint.host  # an IPv6 literal
    head = ("POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\n"
            "Content-Length: %d\r\n\r\n" % (endpoint.path, host, endpoint.port, len(body)))
    return Request(head.encode("latin-1") + body, prompt_tokens, output_tokens)


class RequestFailed(Exception):
    """A request that failed, with the sentence for the user."""


def explain_status(endpoint: Endpoint, status: int, body: bytes) -> str:
    text = body[:300].decode("utf-8", "replace").strip().replace("\n", " ")
    if status in (404, 405):
        return ("%s is not an OpenAI-compatible endpoint: POST %s answered HTTP %d%s"
                % (endpoint.url(), endpoint.path, status, " (%s)" % text if text else ""))
    return "the server answered HTTP %d to POST %s%s" % (status, endpoint.path, ": %s" % text if text else "")


def not_streamed(endpoint: Endpoint, kind: str) -> str:
    return ("the server did not stream: it answered POST %s with %s instead of text/event-stream "
            "(does it refuse stream=true?)" % (endpoint.path, kind or "no content type"))


class Answer:
    """One streamed answer as its bytes arrive: SSE events parsed as they come, a stamp per text chunk.

    ``feed`` takes the body (already de-chunked) and the time the bytes were read; ``error`` is set once the
    server said something that ends the request (an error event, a line that is not JSON)."""

    __slots__ = ("_buffer", "_data", "done", "error", "finished", "pieces", "stamps", "usage")

    def __init__(self) -> None:
        self.stamps: List[float] = []
        self.pieces: List[str] = []
        self.usage: Optional[Dict[str, Any]] = None
        self.finished = False  # [DONE] or a finish_reason came
        self.done = False  # [DONE] came
        self.error: Optional[str] = None
        self._buffer = b""
        self._data: Optional[bytes] = None  # the data of the event being read

    def feed(self, piece: bytes, now: float) -> None:
        buffer = self._buffer + piece if self._buffer else piece
        start = 0
        while self.error is None:
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            line = buffer[start:end]
            start = end + 1
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line:
                if self._data is not None:
                    data, self._data = self._data, None
                    self._event(data, now)
            elif line[:5] == b"data:":
                value = line[6:] if line[5:6] == b" " else line[5:]
                self._data = value if self._data is None else self._data + b"\n" + value
            # ``:`` comments (pings), ``event:``/``id:``/``retry:`` fields: nothing a completion needs
        self._buffer = buffer[start:]

    def close(self, now: float) -> None:
        """The body ended: an event the server did not end with a blank line still counts."""
        if self._buffer and self.error is None:
            self.feed(b"\n", now)
        if self._data is not None and self.error is None:
            data, self._data = self._data, None
            self._event(data, now)

    def _event(self, data: bytes, now: float) -> None:
        if data == b"[DONE]":
            self.finished = self.done = True
            return
        try:  # json.loads(bytes) costs twice this: its encoding sniff and wrappers (docs/performance.md)
            text = data.decode("utf-8").strip()
            event, end = _decode(text)
            if end != len(text):
                raise ValueError("more after the JSON value")
        except ValueError:
            self.error = "the server sent a stream line that is not JSON: %r" % data[:120].decode("utf-8", "replace")
            return
        if type(event) is not dict:
            return
        error = event.get("error")
        if error is not None:
            message = error.get("message") if isinstance(error, dict) else error
            self.error = "the server reported an error mid-stream: %s" % str(message)[:300]
            return
        choices = event.get("choices")
        if choices and type(choices) is list:
            choice = choices[0]
            if type(choice) is dict:
                piece = choice.get("text")
                if piece is None:
                    delta = choice.get("delta")
                    piece = delta.get("content") if type(delta) is dict else None
                if piece and type(piece) is str:
                    self.stamps.append(now)
                    self.pieces.append(piece)
                if choice.get("finish_reason"):
                    self.finished = True
            if len(choices) > 1 and not self.finished:
                self.finished = any(isinstance(c, dict) and c.get("finish_reason") for c in choices)
        usage = event.get("usage")
        if usage is not None and type(usage) is dict:
            self.usage = usage


def outcome(endpoint: Endpoint, request: Request, answer: Optional[Answer], start: float,
            scheduled: Optional[float], ended: float, failure: Optional[str] = None,
            count_tokens: Optional[Callable[[str], int]] = None) -> Outcome:
    """What one request came to: its timeline and what was wrong with it, if anything (a pure function)."""
    stamps = tuple(answer.stamps) if answer is not None else ()
    n, prompt_tokens = request.output_tokens, request.prompt_tokens

    def failed(error: str, text: str = "") -> Outcome:
        return Outcome(Timeline(start, stamps, 0, prompt_tokens, error=error, scheduled=scheduled), text=text,
                       ended=ended)

    if failure is not None:
        return failed(failure)
    assert answer is not None
    text = "".join(answer.pieces)
    if answer.error is not None:
        return failed(answer.error, text)
    if not answer.finished:  # first: a dropped stream's missing usage is the drop's doing
        return failed("the connection closed mid-stream after %d of %d tokens" % (len(stamps), n), text)
    usage = answer.usage
    if usage is not None and isinstance(usage.get("completion_tokens"), int):
        got, source = usage["completion_tokens"], "usage"
    elif count_tokens is not None:
        got, source = count_tokens(text), "tokenizer"
    else:
        return failed("the server sent no usage (token counts) with its stream and no tokenizer of the model is at "
                      "hand to count them: serve it with a server that honours stream_options.include_usage", text)
    seen_prompt = usage.get("prompt_tokens") if usage is not None else None
    seen_prompt = seen_prompt if isinstance(seen_prompt, int) else None
    error = None
    if not stamps:
        error = "the server streamed no text (0 of %d tokens)" % n
    elif got < n:
        error = ("the server stopped %d tokens short (%d of %d): it does not honour %s"
                 % (n - got, got, n, {"vllm": "ignore_eos/min_tokens", "transformers": "min_new_tokens"}.get(
                     endpoint.dialect, "max_tokens as an exact length")))
    timeline = Timeline(start, stamps, got if error is None else 0,
                        seen_prompt if seen_prompt is not None else prompt_tokens, error=error, scheduled=scheduled)
    return Outcome(timeline, short=error is not None and got < n and bool(stamps), token_source=source,
                   usage_prompt_tokens=seen_prompt, text=text, ended=ended)


def list_models(host: str, port: int, prefix: str = "/v1", timeout_s: float = 5.0) -> List[str]:
    """The ids ``GET /v1/models`` lists; raises RequestFailed with a sentence when it is not an OpenAI answer."""
    conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    url = "http://%s:%d%s/models" % (host, port, prefix)
    try:
        conn.request("GET", prefix + "/models")
        response = conn.getresponse()
        body = response.read()
    except (OSError, http.client.HTTPException) as exc:
        raise RequestFailed("cannot reach %s: %s" % (url, exc)) from None
    finally:
        conn.close()
    if response.status != 200:
        raise RequestFailed("%s is not an OpenAI-compatible endpoint: GET %s/models answered HTTP %d"
                            % (url.rsplit("/v1", 1)[0], prefix, response.status))
    try:
        data = json.loads(body.decode("utf-8"))
        return [str(item["id"]) for item in data["data"]]
    except (ValueError, KeyError, TypeError):
        raise RequestFailed("%s is not an OpenAI-compatible endpoint: GET %s/models did not answer a model list"
                            % (url.rsplit("/v1", 1)[0], prefix)) from None
