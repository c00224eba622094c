"""One streamed request to an OpenAI-compatible server, timed by the client (threads + http.client, stdlib).

vLLM's ``endpoint_request_func.py`` habit: one function per request returning a plain record of timestamps;
every figure is computed afterwards by ``remote_agent.llm_figures``.  A chunk counts as a token's arrival when
it carries text (``choices[0].text`` or ``choices[0].delta.content``): a role-only first chunk, which
``transformers serve`` sends before generating anything, is not a first token.

Output tokens come from the stream's ``usage`` (asked for with ``stream_options.include_usage``), or, where a
server sends none, from a counter of the model's tokens the caller supplies (``token_source`` says which).
A request returning fewer than N tokens is marked short: an error, never a fast figure (DESIGN.md §11).
"""
from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Tuple

from remote_agent.llm_figures import Timeline

APIS = ("completions", "chat")
# How a server is asked for exactly N tokens:
#  vllm         ignore_eos + min_tokens (vLLM, SGLang, and servers that accept vLLM's extra fields)
#  transformers transformers serve's own ``generation_config`` field (4.56 refuses unknown keys with 422)
#  openai       max_tokens only (a server that knows neither; a request short of N is then flagged)
DIALECTS = ("vllm", "transformers", "openai")


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


def _chunk_text(data: Dict[str, Any]) -> Optional[str]:
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    choice = choices[0]
    if isinstance(choice.get("text"), str):
        return choice["text"]
    delta = choice.get("delta")
    if isinstance(delta, dict) and isinstance(delta.get("content"), str):
        return delta["content"]
    return None


def _finished(data: Dict[str, Any]) -> bool:
    choices = data.get("choices")
    return isinstance(choices, list) and any(isinstance(c, dict) and c.get("finish_reason") for c in choices)


class RequestFailed(Exception):
    """A request that failed, with the sentence for the user."""


def _explain_status(endpoint: Endpoint, status: int, body: bytes) -> str:
    text = body[:300].decode("utf-8", "replace").strip().replace("\n", " ")
    if status in (404, 405):
        return ("%s is not an OpenAI-compatible endpoint: POST %s answered HTTP %d%s"
                % (endpoint.url(), endpoint.path, status, " (%s)" % text if text else ""))
    return "the server answered HTTP %d to POST %s%s" % (status, endpoint.path, ": %s" % text if text else "")


def stream_request(endpoint: Endpoint, prompt: str, prompt_tokens: int, output_tokens: int,
                   count_tokens: Optional[Callable[[str], int]] = None,
                   clock: Callable[[], float] = time.perf_counter) -> Outcome:
    """Send one streaming request and read it to the end; never raises (a failure is the outcome's error)."""
    stamps: List[float] = []
    start = clock()
    try:
        text, usage, finished, stamps, start = _exchange(endpoint, prompt, output_tokens, stamps, clock)
    except RequestFailed as exc:
        return Outcome(Timeline(start, tuple(stamps), 0, prompt_tokens, error=str(exc)))
    if not finished:  # first: a dropped stream's missing usage is the drop's doing
        return Outcome(Timeline(start, tuple(stamps), 0, prompt_tokens, error=(
            "the connection closed mid-stream after %d of %d tokens" % (len(stamps), output_tokens))), text=text)
    if usage is not None and isinstance(usage.get("completion_tokens"), int):
        got, source = usage["completion_tokens"], "usage"
    elif count_tokens is not None:
        got, source = count_tokens(text), "tokenizer"
    else:
        return Outcome(Timeline(start, tuple(stamps), 0, prompt_tokens, error=(
            "the server sent no usage (token counts) with its stream and no tokenizer of the model is at hand "
            "to count them: serve it with a server that honours stream_options.include_usage")), text=text)
    seen_prompt = usage.get("prompt_tokens") if usage is not None else None
    error = None
    if not stamps:
        error = "the server streamed no text (0 of %d tokens)" % output_tokens
    elif got < output_tokens:
        error = ("the server stopped %d tokens short (%d of %d): it does not honour %s"
                 % (output_tokens - got, got, output_tokens,
                    {"vllm": "ignore_eos/min_tokens", "transformers": "min_new_tokens"}.get(
                        endpoint.dialect, "max_tokens as an exact length")))
    prompt_seen = seen_prompt if isinstance(seen_prompt, int) else prompt_tokens
    timeline = Timeline(start, tuple(stamps), got if error is None else 0, prompt_seen, error=error)
    return Outcome(timeline, short=error is not None and got < output_tokens and bool(stamps),
                   token_source=source, usage_prompt_tokens=seen_prompt if isinstance(seen_prompt, int) else None,
                   text=text)


def _exchange(endpoint: Endpoint, prompt: str, output_tokens: int, stamps: List[float],
              clock: Callable[[], float]) -> Tuple[str, Optional[Dict[str, Any]], bool, List[float], float]:
    body = json.dumps(request_body(endpoint, prompt, output_tokens)).encode("utf-8")
    conn = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=endpoint.timeout_s)
    start = clock()
    try:
        try:
            conn.request("POST", endpoint.path, body=body, headers={
                "Content-Type": "application/json", "Accept": "text/event-stream"})
            response = conn.getresponse()
        except ConnectionRefusedError:
            raise RequestFailed("cannot connect to %s: connection refused (is the server running?)"
                                % endpoint.url()) from None
        except TimeoutError:
            raise RequestFailed("the server at %s did not answer within %g s" % (endpoint.url(), endpoint.timeout_s)) \
                from None
        except (OSError, http.client.HTTPException) as exc:
            raise RequestFailed("the request to %s failed: %s" % (endpoint.url(), exc)) from None
        if response.status != 200:
            raise RequestFailed(_explain_status(endpoint, response.status, response.read()))
        kind = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if kind != "text/event-stream":
            raise RequestFailed("the server did not stream: it answered POST %s with %s instead of text/event-stream "
                                "(does it refuse stream=true?)" % (endpoint.path, kind or "no content type"))
        return _read_events(response, endpoint, stamps, clock) + (stamps, start)
    finally:
        conn.close()


def _read_events(response: Any, endpoint: Endpoint, stamps: List[float],
                 clock: Callable[[], float]) -> Tuple[str, Optional[Dict[str, Any]], bool]:
    pieces: List[str] = []
    usage: Optional[Dict[str, Any]] = None
    finished = False
    while True:
        try:
            raw = response.readline()
        except TimeoutError:
            raise RequestFailed("no data from the server for %g s after %d tokens (a stalled stream)"
                                % (endpoint.timeout_s, len(stamps))) from None
        except (OSError, http.client.HTTPException):
            break  # a connection reset or a chunked body cut short: the stream dropped
        if not raw:
            break
        now = clock()
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data:"):
            continue  # blank separators, comments (": ping"), event names
        payload = line[5:].strip()
        if payload == "[DONE]":
            finished = True
            break
        try:
            data = json.loads(payload)
        except ValueError:
            raise RequestFailed("the server sent a stream line that is not JSON: %r" % payload[:120]) from None
        if not isinstance(data, dict):
            continue
        if data.get("error") is not None:
            error = data["error"]
            message = error.get("message") if isinstance(error, dict) else error
            raise RequestFailed("the server reported an error mid-stream: %s" % str(message)[:300])
        text = _chunk_text(data)
        if text:
            stamps.append(now)
            pieces.append(text)
        if isinstance(data.get("usage"), dict):
            usage = data["usage"]
        finished = finished or _finished(data)
    return "".join(pieces), usage, finished


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
