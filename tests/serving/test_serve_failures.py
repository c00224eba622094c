"""Figures that count every failure (issue 26, part 3): a failed request is never good, a level meets an SLO only
within the error bound, warm-up failures are retried and counted, latency under MLPerf's presets counts from the
scheduled send, ITL is judged one way, presets name their model, --endpoint --model ID works, and a server that
dies mid-level is named at once with the levels before it kept."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from remote_agent import llm_figures as figures
from remote_agent.llm_figures import Timeline
from tests.serving.mock_openai import MockServer

MOCK = str(Path(__file__).resolve().parent / "mock_openai.py")
SHAPE = ["--input-lens", "16", "--output-lens", "8", "--duration", "0.01", "--min-iters", "8"]
LOOSE = "ttft_p99=5000ms,tpot_p99=1000ms"  # every level of the mock meets these latencies


def mock_cmd(*extra: str) -> str:
    return " ".join([sys.executable, MOCK, "--port", "{port}", "--ttft", "0.005", "--itl", "0.001", *extra])


def _ok(start: float) -> Timeline:
    return Timeline(start, (start + 0.1, start + 0.12, start + 0.14), output_tokens=3, prompt_tokens=8)


def test_a_level_where_a_third_failed_never_meets_the_slo_nor_becomes_the_goodput_point():
    failed = Timeline(0.05, (), output_tokens=0, prompt_tokens=8, error="the server answered HTTP 500")
    slo = figures.parse_slo(LOOSE)
    third = figures.serve_summary([_ok(0.0), _ok(0.2), failed], slo)
    assert third["slo_met"] is False and third["error_rate"] == pytest.approx(1 / 3)
    assert third["slo_misses"] == ["error rate 33.3% > 1%"]
    assert third["good_requests"] == 2  # the completed ones met the latencies; the failed one is never good
    clean = figures.serve_summary([_ok(0.0), _ok(0.2)], slo)
    third.update(concurrency=4, output_tok_s=999.0)  # the faster level, had its failures not counted
    clean.update(concurrency=1)
    assert figures.goodput_point([clean, third], slo)["concurrency"] == 1
    assert figures.goodput_point([third], slo) is None
    assert figures.slo_unmet_sentence([third], slo) == ("no load kept its errors within 1%; the fewest were 33.3% at "
                                                        "concurrency 4")
    # A run stored before error_rate was kept is judged from its counts.
    assert figures.level_meets({"requests": 3, "completed": 2, "errors": 1, "ttft_ms": {"p99": 1.0}}, slo)[0] is False


def test_a_server_failing_every_third_request_never_yields_a_met_level(run_cli):
    done = run_cli("run", "--host", "local", "--workload", "serve", "--server-cmd", mock_cmd("--fail-every", "3"),
                   "--concurrency", "1,2", "--slo", LOOSE, *SHAPE, "--json")
    assert done.code == 0, done.stderr  # an SLO no level meets is a result
    result = json.loads(done.stdout)[0]
    serve = result["serve"]
    assert serve["levels"] and all(lv["slo_met"] is False for lv in serve["levels"])
    assert all(0.25 < lv["error_rate"] < 0.45 for lv in serve["levels"])
    assert serve["goodput_point"] is None and serve["slo_max_error_rate"] == 0.01
    assert re.search(r"no load kept its errors within 1%; the fewest were 3\d(\.\d)?% at concurrency \d",
                     serve["slo_unmet"]), serve["slo_unmet"]
    # Its warm-up met a failure too (the server's 3rd request): retried, counted, not the end of the run.
    assert any(re.search(r"concurrency 1: 1 of 2 warm-up requests failed", w) for w in result["warnings"]), \
        result["warnings"]
    text = run_cli("runs", "show", result["run_id"]).stdout
    assert re.search(r"c=1 .* 3\d(\.\d)?% .* missed", text), text  # the error rate beside the figures
    assert re.search(r"client  c=2: [0-9.e+-]+ ms CPU a request \([0-9.e+-]+% of a core\), send lag p50 [0-9.e+-]+ / "
                     r"p99 [0-9.e+-]+ / max [0-9.e+-]+ ms", text), text  # what the client itself cost
    assert "a level meets the SLO with at most 1% of its requests failed" in text


def test_a_server_that_keeps_failing_its_warm_up_fails_the_run_in_one_sentence(run_cli):
    # Its first two requests (the first request, the prompt check) answer; every one after fails.
    done = run_cli("run", "--host", "local", "--workload", "serve", "--server-cmd", mock_cmd("--fail-after", "2"),
                   "--concurrency", "1", *SHAPE)
    assert done.code != 0
    assert "run failed on local: every warm-up request at concurrency 1 failed, in 3 rounds of 1: the server " \
           "answered HTTP 500 to POST /v1/completions" in done.stderr, done.stderr


def test_an_itl_term_is_judged_on_each_requests_largest_gap_for_the_level_and_for_goodput_alike():
    # 20 requests of 11 tokens: each has nine 10 ms gaps and one 60 ms stall.  Pooled, nine gaps in ten are 10 ms,
    # so the p90 gap is under 50 ms; per request, every one stalled for 60 ms.
    requests = []
    for i in range(20):
        start = float(i)
        stamps = [start + 0.1 + 0.01 * k for k in range(10)]
        stamps.append(stamps[-1] + 0.06)
        requests.append(Timeline(start, tuple(stamps), output_tokens=11, prompt_tokens=8))
    slo = figures.parse_slo("itl_p90=50ms")
    summary = figures.serve_summary(requests, slo)
    assert summary["itl_ms"]["p90"] < 50  # vLLM's pooled gaps: shown, judging nothing
    assert summary["itl_max_ms"]["p90"] == pytest.approx(60.0)
    assert summary["slo_met"] is False and summary["good_requests"] == 0  # one rule for both
    assert summary["slo_misses"] == ["p90 ITL 60 ms > 50 ms"]


def test_mlperf_presets_name_their_model_and_the_old_names_are_refused():
    assert figures.parse_slo("mlperf-llama3.1-8b-server") == {"ttft_p99": 2000.0, "tpot_p99": 100.0}
    assert figures.parse_slo("mlperf-llama3.1-8b-interactive") == {"ttft_p99": 500.0, "tpot_p99": 30.0}
    assert figures.parse_slo("mlperf-llama2-70b-server") == {"ttft_p99": 2000.0, "tpot_p99": 200.0}
    assert figures.parse_slo("mlperf-llama2-70b-interactive") == {"ttft_p99": 450.0, "tpot_p99": 40.0}
    assert figures.parse_slo("mlperf-llama3.1-405b-server") == {"ttft_p99": 6000.0, "tpot_p99": 175.0}
    assert figures.parse_slo("mlperf-llama3.1-405b-interactive") == {"ttft_p99": 4500.0, "tpot_p99": 80.0}
    with pytest.raises(figures.SloError) as caught:
        figures.parse_slo("mlperf-server")
    assert str(caught.value) == (
        "mlperf-server was MLPerf's Llama-3.1-8B limits applied to any model; name the model whose limits you mean: "
        "mlperf-llama3.1-8b-server (p99 TPOT ≤ 100 ms, p99 TTFT ≤ 2000 ms), mlperf-llama2-70b-server (p99 TPOT ≤ "
        "200 ms, p99 TTFT ≤ 2000 ms), mlperf-llama3.1-405b-server (p99 TPOT ≤ 175 ms, p99 TTFT ≤ 6000 ms)")
    about = figures.preset_about("mlperf-llama2-70b-interactive")
    assert about["latency_from"] == "scheduled" and any("600 s" in text for text in about["not_applied"])


def test_the_old_preset_name_is_refused_before_any_host_is_touched(run_cli):
    done = run_cli("run", "--host", "local", "--workload", "serve", "--endpoint", "http://127.0.0.1:9",
                   "--slo", "mlperf-interactive", *SHAPE)
    assert done.code != 0
    assert "--slo: mlperf-interactive was MLPerf's Llama-3.1-8B limits applied to any model; name the model whose " \
           "limits you mean: mlperf-llama3.1-8b-interactive (p99 TPOT ≤ 30 ms, p99 TTFT ≤ 500 ms)" in done.stderr


def test_latency_counts_from_the_scheduled_send_when_asked_and_the_lag_is_kept_either_way():
    due = Timeline(1.0, (1.1, 1.2), output_tokens=2, prompt_tokens=8, scheduled=0.7)  # sent 300 ms late
    on_time = Timeline(2.0, (2.1, 2.2), output_tokens=2, prompt_tokens=8, scheduled=2.0)
    sent = figures.serve_summary([due, on_time])
    scheduled = figures.serve_summary([due, on_time], latency_from="scheduled")
    assert sent["ttft_ms"]["p50"] == pytest.approx(100.0) and sent["latency_from"] == "send"
    assert scheduled["ttft_ms"]["p50"] == pytest.approx(250.0) and scheduled["latency_from"] == "scheduled"
    assert sent["tpot_ms"]["p50"] == pytest.approx(scheduled["tpot_ms"]["p50"])  # decode is decode
    assert sent["client"]["send_lag_ms"] == scheduled["client"]["send_lag_ms"] == pytest.approx(
        {"p50": 150.0, "p99": 297.0, "max": 300.0})


def test_a_preset_run_times_requests_from_their_schedule_and_reports_the_clients_cost(run_cli):
    with MockServer(ttft=0.005, itl=0.001) as mock:
        done = run_cli("run", "--host", "local", "--workload", "serve", "--endpoint", f"http://127.0.0.1:{mock.port}",
                       "--concurrency", "2", "--slo", "mlperf-llama3.1-8b-interactive", *SHAPE, "--json")
    assert done.code == 0, done.stderr
    serve = json.loads(done.stdout)[0]["serve"]
    assert serve["latency_from"] == "scheduled" and serve["slo_preset"]["name"] == "mlperf-llama3.1-8b-interactive"
    assert serve["itl_rule"] == "largest gap per request"
    for level in serve["levels"]:
        assert level["latency_from"] == "scheduled" and level["error_rate"] == 0
        assert level["client"]["cpu_s_per_request"] > 0
        lag = level["client"]["send_lag_ms"]
        assert 0 <= lag["p50"] <= lag["p99"] <= lag["max"]


def test_an_endpoint_run_measures_the_model_id_named_with_model(run_cli):
    with MockServer(ttft=0.005, itl=0.001, also_models=("org/other-model",)) as mock:
        done = run_cli("run", "--host", "local", "--workload", "serve", "--endpoint", f"http://127.0.0.1:{mock.port}",
                       "--model", "org/other-model", "--concurrency", "1", *SHAPE, "--json")
        asked = {body.get("model") for body in mock.settings.bodies}
        unknown = run_cli("run", "--host", "local", "--workload", "serve", "--endpoint",
                          f"http://127.0.0.1:{mock.port}", "--model", "org/no-such", "--concurrency", "1", *SHAPE)
    assert done.code == 0, done.stderr
    serve = json.loads(done.stdout)[0]["serve"]
    assert serve["server"]["model"] == "org/other-model" and asked == {"org/other-model"}
    assert unknown.code != 0
    assert "the server lists mock/model, org/other-model, not org/no-such: give --model one of the ids GET " \
           "/v1/models lists" in unknown.stderr, unknown.stderr


def test_a_server_that_dies_mid_level_is_named_at_once_and_the_levels_before_it_are_kept(run_cli):
    # Its POSTs: 1 the first request, 2 the prompt check, 3 concurrency 1's warm-up, 4-11 its 8 requests (one at a
    # time: exactly 8), 12-13 (or 14) concurrency 2's warm-up; it exits on the 18th, within concurrency 2.
    done = run_cli("run", "--host", "local", "--workload", "serve", "--server-cmd",
                   mock_cmd("--exit-after", "18", "--exit-code", "25"), "--concurrency", "1,2", *SHAPE)
    assert done.code != 0
    last = next(line for line in done.stderr.splitlines() if line.startswith("neuronbench: error:"))
    assert re.search(r"run failed on local: the server exited with code 25 during concurrency 2; its last log lines: "
                     r".*the mock exits on request 18, on purpose$", last), done.stderr
    run_id = json.loads(run_cli("runs", "list", "--json").stdout)["runs"][0]["run_id"]
    result = json.loads(run_cli("runs", "show", run_id, "--json").stdout)["result"]
    [kept] = result["serve"]["levels"]
    assert (kept["concurrency"], kept["requests"], kept["errors"]) == (1, 8, 0)
    assert not any("failed (first:" in w for w in result.get("warnings") or [])  # no pile of refused requests


def test_the_client_limit_is_said_when_the_client_was_busy_or_late():
    busy = {"concurrency": 16, "client": {"cpu_share": 0.93, "send_lag_ms": {"p99": 0.1}}, "ttft_ms": {"p50": 20.0}}
    late = {"concurrency": 4, "client": {"cpu_share": 0.2, "send_lag_ms": {"p99": 6.0}}, "ttft_ms": {"p50": 20.0}}
    fine = {"concurrency": 4, "client": {"cpu_share": 0.2, "send_lag_ms": {"p99": 0.5}}, "ttft_ms": {"p50": 20.0}}
    assert figures.client_limit_sentence(busy) == (
        "the load client kept 93% of a CPU core busy at concurrency 16: it may have been the limit there, not the "
        "server (run the client on a host with more free cores, or lower the load)")
    assert figures.client_limit_sentence(late) == (
        "the load client sent late at concurrency 4 (send lag p99 6 ms against a TTFT p50 of 20 ms): it may have "
        "been the limit there, not the server")
    assert figures.client_limit_sentence(fine) is None
    assert figures.client_limit_sentence({"concurrency": 1}) is None  # a run stored before the client was measured
