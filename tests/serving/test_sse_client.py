"""The stdlib SSE client against a mock OpenAI server with set timings: the figures' arithmetic and every
bad answer's sentence, exactly."""
from __future__ import annotations

import threading

import pytest

from remote_agent import llm_figures as figures
from remote_agent.serving import load
from remote_agent.serving.sse import Endpoint, RequestFailed, list_models, request_body, stream_request
from tests.serving.mock_openai import MODEL, MockServer


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


def test_a_closed_loop_level_keeps_c_requests_in_flight_and_stops_by_its_rule():
    with MockServer(ttft=0.01, itl=0.002) as mock:
        ep = endpoint(mock)
        level = load.closed_loop(lambda i: stream_request(ep, "w " * 4, 4, 3), 3,
                                 load.LevelRule(min_requests=12, duration_s=0.0), threading.Event())
        assert mock.settings.most_in_flight == 3
    assert level.stopped_by == "duration" and len(level.outcomes) >= 12
    summary = figures.serve_summary([o.timeline for o in level.outcomes])
    assert summary["errors"] == 0 and summary["output_tokens"] == 3 * summary["completed"]
    assert summary["output_tok_s"] == pytest.approx(summary["output_tokens"] / summary["duration_s"])


def test_a_level_stops_on_its_error_rate():
    with MockServer(mode="error") as mock:
        ep = endpoint(mock)
        level = load.closed_loop(lambda i: stream_request(ep, "a", 1, 2), 1,
                                 load.LevelRule(min_requests=1000, duration_s=60.0), threading.Event())
    assert level.stopped_by == "errors" and len(level.outcomes) == load.ERROR_FLOOR


def test_an_open_loop_level_sends_on_the_seeded_poisson_schedule():
    with MockServer(ttft=0.0, itl=0.0) as mock:
        ep = endpoint(mock)
        level, most = load.open_loop(lambda i: stream_request(ep, "a", 1, 2), 200.0,
                                     load.LevelRule(min_requests=20, duration_s=0.0, max_requests=20), 7,
                                     threading.Event())
    assert level.stopped_by == "count" and len(level.outcomes) == 20 and most >= 1
