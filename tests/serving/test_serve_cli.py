"""`neuronbench run --workload serve` end to end on this computer (the real agent, a mock OpenAI server through
--server-cmd and --endpoint), then compare: hosts ranked by $ per 1M output tokens at the SLO, and the host that
met it at no load named with its sentence."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.serving.mock_openai import MockServer

MOCK = str(Path(__file__).resolve().parent / "mock_openai.py")
SHAPE = ["--input-lens", "16", "--output-lens", "8", "--duration", "0.5", "--min-iters", "8"]
SLO = "ttft_p99=200ms,tpot_p99=20ms"


def mock_cmd(*extra: str) -> str:
    return " ".join([sys.executable, MOCK, "--port", "{port}", *extra])


def test_serve_runs_compare_by_cost_per_million_output_tokens_at_the_slo(run_cli):
    assert run_cli("hosts", "add", "fast", "--local", "--instance-type", "g5.xlarge").code == 0
    assert run_cli("hosts", "add", "slow", "--local", "--instance-type", "c7i.large").code == 0
    fast = run_cli("run", "--host", "fast", "--workload", "serve", "--server-cmd", mock_cmd("--ttft", "0.01"),
                   "--concurrency", "1,2", "--slo", SLO, *SHAPE, "--json")
    assert fast.code == 0, fast.stderr
    result = json.loads(fast.stdout)[0]
    assert result["status"] == "ok" and result["serve"]["slo_unmet"] is None
    cost = result["cost"]
    point = cost["usd_per_1m_output_tokens"][0]
    assert point["operating_point"] == "goodput" and point["slo_met"] is True
    best = max((lv for lv in result["serve"]["levels"] if lv["slo_met"]), key=lambda lv: lv["output_tok_s"])
    expected = cost["usd_per_hour"] / (3600 * best["output_tok_s"]) * 1e6
    assert point["usd_per_1m_output_tokens"] == pytest.approx(expected)
    assert cost["server_load"]["seconds"] == result["serve"]["server"]["load_s"]

    slow = run_cli("run", "--host", "slow", "--workload", "serve", "--server-cmd",
                   mock_cmd("--ttft", "0.3", "--itl", "0.03"), "--concurrency", "1", "--slo", SLO, *SHAPE)
    assert slow.code == 0, slow.stderr  # an SLO no level meets is a result, not a failure
    assert re.search(r"16 in / 8 out: no load met p99 TPOT ≤ 20 ms; the lowest was \d+ ms at concurrency 1; no load "
                     r"met p99 TTFT ≤ 200 ms; the lowest was \d+ ms at concurrency 1", slow.stdout), slow.stdout
    ids = [run["run_id"] for run in json.loads(run_cli("runs", "list", "--json").stdout)["runs"]]
    compared = run_cli("compare", *ids)
    assert compared.code == 0, compared.stderr
    assert re.search(r"Serving mock/model \(16 in / 8 out\) at p99 TPOT ≤ 20 ms, p99 TTFT ≤ 200 ms, the cheapest "
                     r"per 1M output tokens is g5\.xlarge at \$[0-9.]+ "
                     r"\((concurrency \d|[0-9.]+ requests/s \(Poisson\))\)\.",
                     compared.stdout), compared.stdout
    assert "c7i.large could not meet the SLO at any load: no load met p99 TPOT ≤ 20 ms" in compared.stdout
    doc = json.loads(run_cli("compare", *ids, "--json").stdout)
    rows = {row["instance_type"]: row for row in doc["rows"]}
    assert rows["c7i.large"]["usd_per_1m_output_tokens"] is None and rows["c7i.large"]["slo_met"] is False
    assert rows["g5.xlarge"]["usd_per_1m_output_tokens"] == point["usd_per_1m_output_tokens"]


def test_an_endpoint_run_names_the_endpoints_only_model(run_cli):
    with MockServer(ttft=0.005, itl=0.001) as mock:
        done = run_cli("run", "--host", "local", "--workload", "serve", "--endpoint", f"http://127.0.0.1:{mock.port}",
                       "--concurrency", "2", *SHAPE, "--json")
    assert done.code == 0, done.stderr
    serve = json.loads(done.stdout)[0]["serve"]
    assert serve["server"]["model"] == "mock/model" and serve["operating_point"] == "saturation"
    assert serve["levels"][0]["concurrency"] == 2 and serve["levels"][0]["errors"] == 0
    # The runs list names what the endpoint served, not the form's default model the user never chose.
    [listed] = json.loads(run_cli("runs", "list", "--json").stdout)["runs"]
    assert listed["model"] == "mock/model"
    assert re.search(r"\bmock/model\b", run_cli("runs", "list").stdout)


def test_a_failed_server_start_is_one_sentence_a_nonzero_exit_and_a_stored_failed_run(run_cli):
    done = run_cli("run", "--host", "local", "--workload", "serve", "--server-cmd", mock_cmd("--mode", "die"), *SHAPE)
    assert done.code != 0
    last = next(line for line in done.stderr.splitlines() if line.startswith("neuronbench: error:"))
    assert re.search(r"run failed on local: the server exited with code 3 during start; its log says: "
                     r"RuntimeError: the mock refuses to start, on purpose$", last), done.stderr
    assert "server log: " in done.stderr  # the detail under it: where the whole log is kept
    runs = json.loads(run_cli("runs", "list", "--json").stdout)["runs"]
    assert runs[0]["status"] == "failed"
