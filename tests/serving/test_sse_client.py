"""The serve client (one event loop, kept-alive HTTP/1.1) against a mock OpenAI server with set timings and
against real vLLM's recorded bytes: the figures' arithmetic, every bad answer's sentence, and the load it puts on
a server, as the server sees it."""
from __future__ import annotations

import itertools
import threading
from pathlib import Path

import pytest

from remote_agent import llm_figures as figures
from remote_agent.serving import load
from remote_agent.serving.client import Client, Connection, _Exchange, stream_request
from remote_agent.serving.sse import (
    Answer,
    Endpoint,
    RequestFailed,
    list_models,
    make_request,
    request_body,
)
from tests.serving.mock_openai import MODEL, MockServer

RECORDED = Path(__file__).resolve().parents[1] / "data" / "serving"


def endpoint(mock: MockServer, api: str = "completions", dialect: str = "vllm", timeout_s: float = 30.0) -> Endpoint:
    return Endpoint("127.0.0.1", mock.port, MODEL, api, dialect, timeout_s=timeout_s)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_a_request_streams_exactly_n_tokens_and_its_figures_follow_from_the_stamps(api):
    with MockServer(ttft=0.05, itl=0.01) as mock:
        out = stream_request(endpoint(mock, api), "a b c d e f g h", 8, 6)
    tl = out.timeline
    assert tl.ok and not out.short
    assert (tl.output_tokens, tl.prompt_tokens, out.token_source) == (6, 8, "usage")
    assert len(tl.token_times) == 6  # one stamp per content chunk; the chat role chunk is no token
    assert figures.ttft_s(tl) >= 0.05  # the server slept that long before its first token
    assert figures.tpot_s(tl) == pytest.approx((figures.e2e_s(tl) - figures.ttft_s(tl)) / 5)
    # Each gap is the client's own stamps, and a late read of one chunk shortens the next gap: only their count
    # and the whole call are bound by the server's sleeps (its last token went out 0.05 + 5 x 0.01 s in).
    assert len(figures.itl_s(tl)) == 5 and min(figures.itl_s(tl)) >= 0
    assert sum(figures.itl_s(tl)) == pytest.approx(tl.token_times[-1] - tl.token_times[0])
    assert figures.e2e_s(tl) >= 0.10
    assert out.text == " t0 t1 t2 t3 t4 t5"


def test_the_request_asks_for_exactly_n_tokens_in_each_servers_dialect():
    base = Endpoint("h", 1, "m")
    assert request_body(base, "p", 7) == {
        "model": "m", "stream": True, "max_tokens": 7, "temperature": 0.0, "stream_options": {"include_usage": True},
        "prompt": "p", "ignore_eos": True, "min_tokens": 7}
    chat = request_body(Endpoint("h", 1, "m", "chat", "transformers"), "p", 7)
    assert chat["messages"] == [{"role": "user", "content": "p"}] and "ignore_eos" not in chat
    assert chat["generation_config"] == ('{"max_new_tokens": 7, "min_new_tokens": 7, "do_sample": false, '
                                         '"eos_token_id": null}')
    assert "ignore_eos" not in request_body(Endpoint("h", 1, "m", dialect="openai"), "p", 7)
    head, _, body = make_request(base, "p", 1, 7).data.partition(b"\r\n\r\n")
    assert head.startswith(b"POST /v1/completions HTTP/1.1\r\n")  # HTTP/1.1: the connection is kept alive
    assert b"Content-Length: %d" % len(body) in head


def test_a_server_that_ignores_ignore_eos_is_flagged_short_never_a_fast_figure():
    with MockServer(mode="short", short=3) as mock:
        out = stream_request(endpoint(mock), "a b", 2, 8)
    assert out.short and not out.timeline.ok
    assert out.timeline.error == "the server stopped 5 tokens short (3 of 8): it does not honour ignore_eos/min_tokens"
    summary = figures.serve_summary([out.timeline])
    assert (summary["errors"], summary["completed"], summary["ttft_ms"]["n"]) == (1, 0, 0)


def test_eos_stops_a_plain_openai_request_short_and_that_is_flagged():
    with MockServer(eos_after=2) as mock:
        out = stream_request(endpoint(mock, dialect="openai"), "a", 1, 5)
    assert out.timeline.error == "the server stopped 3 tokens short (2 of 5): it does not honour max_tokens as an " \
                                 "exact length"


def test_missing_usage_is_an_error_unless_the_models_tokenizer_counts():
    with MockServer(mode="no_usage") as mock:
        without = stream_request(endpoint(mock), "a b", 2, 4)
        counted = stream_request(endpoint(mock), "a b", 2, 4, count_tokens=lambda text: len(text.split()))
    assert without.timeline.error == (
        "the server sent no usage (token counts) with its stream and no tokenizer of the model is at hand to count "
        "them: serve it with a server that honours stream_options.include_usage")
    assert counted.timeline.ok and counted.token_source == "tokenizer" and counted.timeline.output_tokens == 4


def test_a_stream_dropped_mid_way_is_an_error_with_how_far_it_got():
    with MockServer(mode="dropped", short=2) as mock:
        out = stream_request(endpoint(mock), "a", 1, 6)
    assert out.timeline.error == "the connection closed mid-stream after 2 of 6 tokens"
    assert not out.short


def test_an_error_chunk_mid_stream_is_an_error():
    with MockServer(mode="mid_error", short=1) as mock:
        out = stream_request(endpoint(mock), "a", 1, 6)
    assert out.timeline.error == "the server reported an error mid-stream: engine died"


def test_bad_answers_each_have_their_sentence():
    with MockServer(mode="not_openai") as mock:
        url = f"http://127.0.0.1:{mock.port}"
        assert stream_request(endpoint(mock), "a", 1, 2).timeline.error == (
            url + "/v1/completions is not an OpenAI-compatible endpoint: POST /v1/completions answered HTTP 404 "
            '({"detail": "Not Found"})')
        with pytest.raises(RequestFailed) as caught:
            list_models("127.0.0.1", mock.port)
        assert str(caught.value) == url + " is not an OpenAI-compatible endpoint: GET /v1/models answered HTTP 404"
    with MockServer(mode="no_stream") as mock:
        assert stream_request(endpoint(mock), "a", 1, 2).timeline.error == (
            "the server did not stream: it answered POST /v1/completions with application/json instead of "
            "text/event-stream (does it refuse stream=true?)")
    with MockServer(mode="error") as mock:
        assert stream_request(endpoint(mock), "a", 1, 2).timeline.error == (
            'the server answered HTTP 500 to POST /v1/completions: {"error": {"message": "the mock failed on '
            'purpose"}}')
    port = mock.port  # closed now: nobody listens
    refused = stream_request(Endpoint("127.0.0.1", port, "m"), "a", 1, 2)
    assert refused.timeline.error == (f"cannot connect to http://127.0.0.1:{port}/v1/completions: connection "
                                      "refused (is the server running?)")


# ------------------------------------------------------------------ real vLLM's bytes, cut anywhere

def _read(answer_bytes: bytes, cuts: list[int], api: str = "completions", closes: bool = False,
          tokens: int = 24) -> tuple:
    """Feed one recorded HTTP answer to a connection in pieces cut at ``cuts`` (then the server's close, if
    ``closes``); its outcome, the connection's state and the client's idle connections."""
    class Transport:
        def write(self, data: bytes) -> None:
            pass

        def abort(self) -> None:
            pass

    ep = Endpoint("127.0.0.1", 1, MODEL, api)
    with Client(ep) as client:
        conn = Connection(client)
        conn.connection_made(Transport())
        result = client.loop.create_future()
        conn.begin(_Exchange(make_request(ep, "p", 32, tokens), 0.0, None, result, False, 0))
        edges = [0, *cuts, len(answer_bytes)]
        for low, high in itertools.pairwise(edges):
            if high > low:
                conn.data_received(answer_bytes[low:high])
        if closes:
            conn.connection_lost(None)
        outcome = result.result()
        return outcome, conn.state, client.idle


@pytest.mark.parametrize("name,api", [("vllm-0.32-cpu-completions.http", "completions"),
                                      ("vllm-0.32-cpu-chat.http", "chat")])
def test_real_vllm_answers_read_the_same_however_the_bytes_arrive(name, api):
    recorded = (RECORDED / name).read_bytes()
    whole, _state, idle = _read(recorded, [], api)
    assert whole.timeline.ok and whole.timeline.output_tokens == 24 and whole.token_source == "usage"
    assert whole.usage_prompt_tokens == 32 and len(whole.text) == 24  # one character a token
    assert len(idle) == 1  # the answer ended cleanly: the connection goes back to be used again
    for step in (1, 7, 61, 250):  # cut inside the headers, chunk sizes, CRLFs, JSON and UTF-8 characters
        cut, _, _ = _read(recorded, list(range(step, len(recorded), step)), api)
        assert (cut.timeline.ok, cut.text, cut.timeline.output_tokens) == (True, whole.text, 24)


def test_answers_framed_by_length_or_by_the_servers_close_read_alike_and_only_one_is_kept_alive():
    events = (b'data: {"choices":[{"index":0,"text":"a"}]}\n\n'
              b'data: {"choices":[{"index":0,"text":"b","finish_reason":"length"}]}\n\n'
              b'data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}\n\n'
              b"data: [DONE]\n\n")
    sized = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s" % (len(events),
                                                                                                    events)
    until_close = b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\n" + events
    said_close = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n" \
                 b"Transfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n0\r\n\r\n" % (len(events), events)
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + sized
    framings = ((sized, False, 1), (until_close, True, 0), (said_close, False, 0), (interim, False, 1))
    for answer, closes, kept in framings:
        for cuts in ([], list(range(1, len(answer)))):
            outcome, _, idle = _read(answer, cuts, closes=closes, tokens=2)
            assert (outcome.timeline.error, outcome.text, outcome.timeline.output_tokens) == (None, "ab", 2)
            assert len(idle) == kept  # reused only when HTTP/1.1 framed its end and did not say close


def test_the_sse_reader_keeps_the_specs_rules():
    answer = Answer()
    stream = (b": ping\r\n\r\n"  # a comment, CRLF lines
              b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}\r\n\r\n'  # role only
              b"event: message\nid: 7\n"
              b'data: {"choices":[{"index":0,\ndata: "text":"a"}]}\n\n'  # two data lines make one event
              b'data:{"choices":[{"index":0,"text":"b","finish_reason":"length"}]}\n\n'  # no space after data:
              b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
              b"data: [DONE]")  # no blank line before the end of the body
    for i, byte in enumerate(stream):
        answer.feed(bytes([byte]), float(i))
    answer.close(99.0)
    assert (answer.pieces, answer.finished, answer.done, answer.error) == (["a", "b"], True, True, None)
    assert answer.usage == {"prompt_tokens": 3, "completion_tokens": 2}
    ends = [stream.index(text) + len(text) - 1 for text in (b'"a"}]}\n\n', b'"length"}]}\n\n')]
    assert answer.stamps == [float(at) for at in ends]  # each stamped when its event's blank line was read
    broken = Answer()
    broken.feed(b'data: {"choices": [\n\ndata: {"choices":[{"text":"late"}]}\n\n', 0.0)
    assert broken.error == "the server sent a stream line that is not JSON: '{\"choices\": ['"
    assert broken.pieces == []  # nothing read past the line that broke the stream


# ------------------------------------------------------------------ the load, as the server sees it

def test_a_closed_loop_level_keeps_c_requests_in_flight_on_c_kept_alive_connections():
    # The mock holds its first requests until 3 are in flight at once: a client keeping fewer would stall them.
    with MockServer(ttft=0.01, itl=0.002, gate=3) as mock:
        ep = endpoint(mock)
        with Client(ep) as client:
            level = load.closed_loop(client, lambda i: make_request(ep, "w " * 4, 4, 3), 3,
                                     load.LevelRule(min_requests=12, duration_s=0.0), threading.Event())
        assert mock.settings.gate_timeouts == 0 and mock.settings.most_in_flight == 3  # never more, and reached
        assert mock.settings.connections == 3  # not one per request: the server accepted 3 for them all
    assert level.stopped_by == "duration" and len(level.outcomes) >= 12
    summary = figures.serve_summary([o.timeline for o in level.outcomes], client_cpu_s=level.cpu_s,
                                    wall_s=level.wall_s)
    assert summary["errors"] == 0 and summary["output_tokens"] == 3 * summary["completed"]
    assert summary["output_tok_s"] == pytest.approx(summary["output_tokens"] / summary["duration_s"])
    client_cost = summary["client"]
    assert client_cost["cpu_s_per_request"] > 0 and client_cost["cpu_s_per_request"] * len(level.outcomes) == \
        pytest.approx(level.cpu_s)
    assert 0 <= client_cost["send_lag_ms"]["p50"] <= client_cost["send_lag_ms"]["p99"] <= \
        client_cost["send_lag_ms"]["max"]


def test_a_connection_the_server_closes_after_each_answer_is_replaced_not_failed():
    with MockServer(ttft=0.0, itl=0.0) as mock:
        mock.settings.close_after = True
        ep = endpoint(mock)
        with Client(ep) as client:
            outcomes = [client.run(client.send(make_request(ep, "a", 1, 2))) for _ in range(5)]
        assert [o.timeline.error for o in outcomes] == [None] * 5
        assert mock.settings.connections == 5


def test_a_level_stops_on_its_error_rate():
    with MockServer(mode="error") as mock:
        ep = endpoint(mock)
        with Client(ep) as client:
            level = load.closed_loop(client, lambda i: make_request(ep, "a", 1, 2), 1,
                                     load.LevelRule(min_requests=1000, duration_s=60.0), threading.Event())
    assert level.stopped_by == "errors" and len(level.outcomes) == load.ERROR_FLOOR


def test_an_open_loop_level_sends_on_the_seeded_poisson_schedule_and_records_each_send_lag():
    with MockServer(ttft=0.0, itl=0.0) as mock:
        ep = endpoint(mock)
        with Client(ep) as client:
            level, most = load.open_loop(client, lambda i: make_request(ep, "a", 1, 2), 200.0,
                                         load.LevelRule(min_requests=20, duration_s=0.0, max_requests=20), 7,
                                         threading.Event())
    assert level.stopped_by == "count" and len(level.outcomes) == 20 and most >= 1
    schedule = load.poisson_schedule(200.0, 20, 7)
    due = sorted(o.timeline.scheduled for o in level.outcomes)
    assert [b - a for a, b in itertools.pairwise(due)] == pytest.approx(
        [b - a for a, b in itertools.pairwise(schedule)])  # sent on the seeded schedule
    assert all(o.timeline.start >= o.timeline.scheduled for o in level.outcomes)


def test_a_send_held_back_by_the_in_flight_cap_is_late_and_says_so(monkeypatch):
    # Coordinated omission: when the cap (or a busy client) delays a send, the open loop must not silently turn
    # closed.  One request at a time against a server that takes 50 ms: the second is due ~5 ms in, sent >= 50.
    monkeypatch.setattr(load, "MAX_IN_FLIGHT", 1)
    with MockServer(ttft=0.05, itl=0.0) as mock:
        ep = endpoint(mock)
        with Client(ep) as client:
            level, most = load.open_loop(client, lambda i: make_request(ep, "a", 1, 2), 200.0,
                                         load.LevelRule(min_requests=4, duration_s=0.0, max_requests=4), 7,
                                         threading.Event())
    assert most == 1
    by_send = sorted(level.outcomes, key=lambda o: o.timeline.start)
    schedule = load.poisson_schedule(200.0, 4, 7)
    assert schedule[-1] < 0.05  # all four were due before the first could have ended
    late = by_send[-1].timeline
    assert late.start - late.scheduled >= 3 * 0.05 - schedule[-1]  # it waited for three 50 ms answers
    sent = figures.serve_summary([o.timeline for o in level.outcomes])
    timed_from_schedule = figures.serve_summary([o.timeline for o in level.outcomes], latency_from="scheduled")
    assert sent["client"]["send_lag_ms"]["max"] >= (3 * 0.05 - schedule[-1]) * 1000
    # From the send, the server looks as fast as ever; from the schedule (MLPerf's rule), the wait is latency.
    assert sent["ttft_ms"]["p99"] < timed_from_schedule["ttft_ms"]["p99"]
    assert timed_from_schedule["ttft_ms"]["p99"] >= (4 * 0.05 - schedule[-1]) * 1000


def test_a_cancelled_level_gives_up_its_requests_in_flight_instead_of_waiting_for_them():
    cancelled = threading.Event()
    with MockServer(ttft=120.0, itl=0.0) as mock:  # an answer that would take two minutes
        ep = endpoint(mock)
        settings = mock.settings

        def user_presses_ctrl_c() -> None:  # once both requests are in the server's hands
            with settings.changed:
                settings.changed.wait_for(lambda: settings.in_flight >= 2, timeout=60)
            cancelled.set()

        with Client(ep) as client:
            threading.Thread(target=user_presses_ctrl_c, daemon=True).start()
            level = load.closed_loop(client, lambda i: make_request(ep, "a", 1, 2), 2,
                                     load.LevelRule(min_requests=10, duration_s=0.0), cancelled)
        assert mock.settings.requests == 2
    assert level.stopped_by == "cancelled" and level.outcomes == []  # given up: no figure, no error counted
