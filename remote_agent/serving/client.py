"""The load client's transport: one asyncio event loop, kept-alive HTTP/1.1 connections, answers read as they come.

The habit of the clients people trust (vLLM's ``endpoint_request_func.py`` on aiohttp, AIPerf's workers): one
long-lived session whose connections outlive a request, and an event loop, not a thread per request.  The agent
is stdlib-only, so the HTTP/1.1 framing is ours (``asyncio.Protocol``): a connection parses its answer in
``data_received`` (the status and headers, then chunked, sized or until-close bodies) and hands the body to the
SSE reader (``sse.Answer``) with one clock reading per read, so each text chunk is stamped when its bytes were read.

- A request's ``start`` is taken when the client begins it (before a connection is opened, if one must be, as
  vLLM's client does); its ``scheduled`` time, given by the load, is when it was due (send lag = start - scheduled).
- A kept-alive connection the server closed while idle is found at once (``connection_lost``); one that closes as
  a request goes out, before any byte of an answer, is retried once on a fresh connection.
- ``abort()`` gives up every request in flight (a cancelled run, a server that died): no figure for those.

Python 3.8: ``asyncio.new_event_loop`` and ``run_until_complete``; nothing newer.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Callable, List, Optional, Set

from remote_agent.llm_figures import Timeline
from remote_agent.serving.sse import (
    Answer,
    Endpoint,
    Outcome,
    Request,
    explain_status,
    make_request,
    not_streamed,
    outcome,
)

_HEAD, _SIZE, _DATA, _DATA_END, _TRAILER, _LENGTH, _UNTIL_CLOSE, _IDLE = range(8)
HEAD_LIMIT = 65536  # bytes of a status line and headers before the answer is called broken
BODY_KEPT = 4096  # bytes of an answer that is not a stream, kept for its sentence
_RETRY = object()  # a reused connection closed before any byte of the answer: send again on a fresh one
_ABORTED = object()


class _Exchange:
    """One request on one connection, from the send to the end of its answer."""

    __slots__ = (
        "answer",
        "attempt",
        "body",
        "kind",
        "received",
        "request",
        "result",
        "reused",
        "scheduled",
        "start",
        "status",
    )

    def __init__(self, request: Request, start: float, scheduled: Optional[float], result: "asyncio.Future[Any]",
                 reused: bool, attempt: int) -> None:
        self.request, self.start, self.scheduled, self.result = request, start, scheduled, result
        self.reused, self.attempt = reused, attempt
        self.received = False  # any byte of the answer
        self.status = 0
        self.kind = ""
        self.answer: Optional[Answer] = None  # a 200 text/event-stream answer
        self.body = b""  # any other answer's first bytes


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection: one request at a time, kept alive between them."""

    def __init__(self, client: "Client") -> None:
        self.client = client
        self.transport: Optional[asyncio.Transport] = None
        self.exchange: Optional[_Exchange] = None
        self.buffer = b""
        self.state = _IDLE
        self.remaining = 0
        self.keep_alive = True
        self.closed = False
        self.last_read = 0.0
        self.timer: Optional[asyncio.TimerHandle] = None

    # ------------------------------------------------------------ asyncio's callbacks
    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self.last_read = now
        exchange = self.exchange
        if exchange is None:  # bytes nobody asked for: this connection's state is unknown now
            self._close()
            return
        exchange.received = True
        self.buffer = self.buffer + data if self.buffer else data
        try:
            self._parse(exchange, now)
        except (ValueError, IndexError):
            if self.exchange is exchange:
                self._end(exchange, now, failure="the server's answer to POST %s is not HTTP/1.1 (%r)"
                          % (self.client.endpoint.path, self.buffer[:80]))

    def eof_received(self) -> bool:
        return False  # the server closed its side: close ours too (connection_lost follows)

    def connection_lost(self, exc: Optional[Exception]) -> None:
        self.closed = True
        self.client._forget(self)
        exchange = self.exchange
        if exchange is None:
            return
        now = time.perf_counter()
        endpoint = self.client.endpoint
        if self.client.aborting:
            self._end(exchange, now, special=_ABORTED)
        elif self.state == _UNTIL_CLOSE:
            self._end(exchange, now)
        elif not exchange.received and exchange.reused and exchange.attempt == 0:
            self._end(exchange, now, special=_RETRY)
        elif not exchange.received:
            self._end(exchange, now, failure="the request to %s failed: %s" % (
                endpoint.url(), exc or "the server closed the connection without an answer"))
        elif not exchange.status:
            self._end(exchange, now, failure="the request to %s failed: the connection closed in the middle of "
                      "the answer's headers" % endpoint.url())
        else:
            self._end(exchange, now)  # a stream cut short: sse.outcome says how far it got

    # ------------------------------------------------------------ one request
    def begin(self, exchange: _Exchange) -> None:
        assert self.transport is not None
        self.exchange = exchange
        self.state, self.buffer = _HEAD, b""
        self.last_read = time.perf_counter()
        self.timer = self.client.loop.call_later(self.client.endpoint.timeout_s, self._watch)
        self.transport.write(exchange.request.data)

    def _watch(self) -> None:
        exchange = self.exchange
        if exchange is None:
            return
        endpoint = self.client.endpoint
        idle = time.perf_counter() - self.last_read
        if idle < endpoint.timeout_s:
            self.timer = self.client.loop.call_later(endpoint.timeout_s - idle, self._watch)
            return
        tokens = len(exchange.answer.stamps) if exchange.answer is not None else 0
        failure = ("no data from the server for %g s after %d tokens (a stalled stream)" % (endpoint.timeout_s, tokens)
                   if exchange.status else
                   "the server at %s did not answer within %g s" % (endpoint.url(), endpoint.timeout_s))
        self._end(exchange, time.perf_counter(), failure=failure)

    def _parse(self, exchange: _Exchange, now: float) -> None:
        buffer, at = self.buffer, 0
        while self.exchange is exchange:
            state = self.state
            if state in (_DATA, _LENGTH):
                have = len(buffer) - at
                if not have:
                    break
                take = have if have < self.remaining else self.remaining
                self._body(exchange, buffer[at:at + take] if take != len(buffer) else buffer, now)
                at += take
                self.remaining -= take
                if exchange.answer is not None and exchange.answer.error is not None:
                    self._end(exchange, now)  # an error event, a line that is not JSON: nothing more to read
                    return
                if not self.remaining:
                    if state == _LENGTH:
                        self.buffer = buffer[at:]
                        self._end(exchange, now, reusable=True)
                        return
                    self.state = _DATA_END
            elif state == _SIZE:
                end = buffer.find(b"\r\n", at)
                if end < 0:
                    break
                size = int(buffer[at:end].split(b";", 1)[0], 16)
                at = end + 2
                if size:
                    self.remaining, self.state = size, _DATA
                else:
                    self.state = _TRAILER
            elif state == _DATA_END:
                if len(buffer) - at < 2:
                    break
                at += 2
                self.state = _SIZE
            elif state == _HEAD:
                end = buffer.find(b"\r\n\r\n", at)
                if end < 0:
                    if len(buffer) - at > HEAD_LIMIT:
                        raise ValueError("no end of headers")
                    break
                head = buffer[at:end]
                at = end + 4
                self._head(exchange, head)
                if self.state == _LENGTH and not self.remaining:
                    self.buffer = buffer[at:]
                    self._end(exchange, now, reusable=True)
                    return
            elif state == _TRAILER:
                end = buffer.find(b"\r\n", at)
                if end < 0:
                    break
                empty = end == at
                at = end + 2
                if empty:
                    self.buffer = buffer[at:]
                    self._end(exchange, now, reusable=True)
                    return
            else:  # _UNTIL_CLOSE: everything is body until the server closes
                if len(buffer) > at:
                    self._body(exchange, buffer[at:], now)
                at = len(buffer)
                if exchange.answer is not None and exchange.answer.error is not None:
                    self._end(exchange, now)
                    return
                break
        self.buffer = buffer[at:]

    def _head(self, exchange: _Exchange, head: bytes) -> None:
        lines = head.split(b"\r\n")
        version, status = lines[0].split(None, 2)[:2]
        code = int(status)
        if 100 <= code < 200:
            return  # an interim answer (100 Continue): the real one follows
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            headers[name.strip().lower()] = value.strip()
        exchange.status = code
        exchange.kind = headers.get(b"content-type", b"").split(b";")[0].strip().lower().decode("latin-1")
        self.keep_alive = version == b"HTTP/1.1" and b"close" not in headers.get(b"connection", b"").lower()
        if b"chunked" in headers.get(b"transfer-encoding", b"").lower():
            self.state = _SIZE
        elif b"content-length" in headers:
            self.state, self.remaining = _LENGTH, int(headers[b"content-length"])
        else:
            self.state, self.keep_alive = _UNTIL_CLOSE, False
        if code == 200 and exchange.kind == "text/event-stream":
            exchange.answer = Answer()

    @staticmethod
    def _body(exchange: _Exchange, piece: bytes, now: float) -> None:
        if exchange.answer is not None:
            exchange.answer.feed(piece, now)
        elif len(exchange.body) < BODY_KEPT:
            exchange.body += piece[:BODY_KEPT - len(exchange.body)]

    def _end(self, exchange: _Exchange, now: float, reusable: bool = False, failure: Optional[str] = None,
             special: Any = None) -> None:
        """The answer is over (or given up): hand back the connection, then the outcome."""
        self.exchange = None
        self.state = _IDLE
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if reusable and self.keep_alive and not self.buffer and not self.closed:
            self.client._release(self)
        elif not self.closed:
            self._close()
        self.client._done(exchange, now, failure, special)

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.abort()  # no lingering close: nothing more is to be said on this connection


class Client:
    """Requests to one endpoint from one event loop, on kept-alive connections (``with Client(...) as c:``).

    ``run(coroutine)`` runs the loop in the calling thread until the coroutine is done; the connections stay
    open between runs (a level's warm-up opens the connections its measurement then uses)."""

    def __init__(self, endpoint: Endpoint, count_tokens: Optional[Callable[[str], int]] = None) -> None:
        self.endpoint, self.count_tokens = endpoint, count_tokens
        self.loop = asyncio.new_event_loop()
        self.idle: List[Connection] = []  # last in, first out: the warmest connection goes next
        self.busy: Set[Connection] = set()
        self.opened = 0  # connections opened so far
        self.aborting = False

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def run(self, coroutine: Any) -> Any:
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        if self.loop.is_closed():
            return
        for conn in self.idle + list(self.busy):
            conn._close()
        pending = [task for task in asyncio.all_tasks(self.loop) if not task.done()]  # connects under way
        for task in pending:
            task.cancel()

        async def settle() -> None:  # the tasks' cancellation and the connections' connection_lost callbacks
            await asyncio.gather(*pending, asyncio.sleep(0), return_exceptions=True)

        self.loop.run_until_complete(settle())
        self.loop.close()

    # ------------------------------------------------------------ requests
    def start(self, request: Request, scheduled: Optional[float] = None) -> "asyncio.Future[Outcome]":
        """Send ``request`` now, on an idle connection when there is one (else a new one); the future's result
        is its Outcome.  Call from within ``run``."""
        result: "asyncio.Future[Outcome]" = self.loop.create_future()
        start = time.perf_counter()
        if self.aborting:
            result.set_result(_given_up(request, start, scheduled))
            return result
        while self.idle:
            conn = self.idle.pop()
            if not conn.closed:
                self.busy.add(conn)
                conn.begin(_Exchange(request, start, scheduled, result, True, 0))
                return result
        self.loop.create_task(self._open(_Exchange(request, start, scheduled, result, False, 0)))
        return result

    async def send(self, request: Request, scheduled: Optional[float] = None) -> Outcome:
        return await self.start(request, scheduled)

    def abort(self) -> None:
        """Give up every request in flight (their outcomes are marked aborted) and send no more."""
        self.aborting = True
        for conn in list(self.busy):
            conn._close()

    async def _open(self, exchange: _Exchange) -> None:
        endpoint = self.endpoint
        try:
            _, conn = await asyncio.wait_for(self.loop.create_connection(
                lambda: Connection(self), endpoint.host, endpoint.port), endpoint.timeout_s)
        except ConnectionRefusedError:
            self._done(exchange, time.perf_counter(), "cannot connect to %s: connection refused (is the server "
                       "running?)" % endpoint.url())
            return
        except asyncio.TimeoutError:
            self._done(exchange, time.perf_counter(), "the server at %s did not answer within %g s"
                       % (endpoint.url(), endpoint.timeout_s))
            return
        except OSError as exc:
            self._done(exchange, time.perf_counter(), "the request to %s failed: %s" % (endpoint.url(), exc))
            return
        self.opened += 1
        if self.aborting:
            conn._close()
            self._done(exchange, time.perf_counter(), None, _ABORTED)
            return
        self.busy.add(conn)
        conn.begin(exchange)

    # ------------------------------------------------------------ from the connections
    def _release(self, conn: Connection) -> None:
        self._forget(conn)
        self.idle.append(conn)

    def _forget(self, conn: Connection) -> None:
        if conn in self.busy:
            self.busy.discard(conn)
        elif conn in self.idle:
            self.idle.remove(conn)

    def _done(self, exchange: _Exchange, now: float, failure: Optional[str], special: Any = None) -> None:
        if exchange.result.done():
            return
        if special is _RETRY and not self.aborting:
            self.loop.create_task(self._open(_Exchange(exchange.request, exchange.start, exchange.scheduled,
                                                       exchange.result, False, 1)))
            return
        if special is not None:
            exchange.result.set_result(_given_up(exchange.request, exchange.start, exchange.scheduled))
            return
        if failure is None and exchange.answer is None:
            failure = (not_streamed(self.endpoint, exchange.kind) if exchange.status == 200 else
                       explain_status(self.endpoint, exchange.status, exchange.body))
        if exchange.answer is not None and failure is None:
            exchange.answer.close(now)
        exchange.result.set_result(outcome(self.endpoint, exchange.request, exchange.answer, exchange.start,
                                           exchange.scheduled, now, failure, self.count_tokens))


def stream_request(endpoint: Endpoint, prompt: str, prompt_tokens: int, output_tokens: int,
                   count_tokens: Optional[Callable[[str], int]] = None) -> Outcome:
    """Send one streaming request on a connection of its own and read it to the end; never raises (a failure is
    the outcome's error).  Loads keep one ``Client`` and its connections instead."""
    with Client(endpoint, count_tokens) as client:
        return client.run(client.send(make_request(endpoint, prompt, prompt_tokens, output_tokens)))


def _given_up(request: Request, start: float, scheduled: Optional[float]) -> Outcome:
    return Outcome(Timeline(start, (), 0, request.prompt_tokens, error="given up by the client", scheduled=scheduled),
                   aborted=True, ended=time.perf_counter())
