"""Serve runs of three servers compare side by side, each at the same SLO, ranked by $ per 1M output tokens at its
goodput point, with the decision sentence naming the cheapest: a recorded real vLLM run (vLLM's CPU build on this
computer, declared an m7i.large), a recorded real `transformers serve` run (declared a c7i.large) and a fresh
--endpoint run against the mock server (declared a g5.xlarge: its figures are the mock's set timings).  How the
two recordings were made: tests/data/runs/README.md."""
from __future__ import annotations

import json
import re

import pytest

from tests.reports.test_monitor_flops import store_recorded
from tests.serving.mock_openai import MockServer

VLLM, HF = "20261129-011543-65321f", "20261128-114732-11a713"
FLAGS = ["--input-lens", "16", "--output-lens", "8", "--concurrency", "1,2", "--duration", "0.5", "--min-iters", "10",
         "--slo", "mlperf-llama3.1-8b-server"]


def test_a_real_vllm_run_a_transformers_run_and_an_endpoint_compare_at_the_slo(app_paths, run_cli):
    store_recorded(app_paths, "serve-vllm-cpu-tiny.events.jsonl", "m7i-box", VLLM, "m7i.large")
    store_recorded(app_paths, "serve-transformers-tiny-cpu.events.jsonl", "cpu-box", HF, "c7i.large")
    assert run_cli("hosts", "add", "gpu-box", "--local", "--instance-type", "g5.xlarge").code == 0
    with MockServer(ttft=0.005, itl=0.001) as mock:
        done = run_cli("run", "--host", "gpu-box", "--workload", "serve", "--endpoint",
                       f"http://127.0.0.1:{mock.port}/v1", "--model", "hf:neuronbench/tiny-random-llama", *FLAGS,
                       "--json")
    assert done.code == 0, done.stderr
    endpoint = json.loads(done.stdout)[0]["run_id"]
    doc = json.loads(run_cli("compare", VLLM, HF, endpoint, "--json").stdout)
    rows = {row["instance_type"]: row for row in doc["rows"]}
    assert set(rows) == {"m7i.large", "c7i.large", "g5.xlarge"}
    assert len({row["model"] for row in rows.values()}) == 1  # one measure: the same model, shape and SLO
    for row in rows.values():
        assert row["slo_met"] is True and row["operating_point"] == "goodput"
        expected = row["usd_per_hour"] / (3600 * row["output_tok_s"]) * 1e6
        assert row["usd_per_1m_output_tokens"] == pytest.approx(expected)
    cheapest = min(rows.values(), key=lambda row: row["usd_per_1m_output_tokens"])
    text = run_cli("compare", VLLM, HF, endpoint).stdout
    sentence = next(line for line in text.splitlines() if line.startswith("Serving "))
    assert re.match(rf"Serving hf:neuronbench/tiny-random-llama \(16 in / 8 out\) at p99 TPOT ≤ 100 ms, p99 TTFT ≤ "
                    rf"2000 ms, the cheapest per 1M output tokens is {re.escape(cheapest['label'])} at \$", sentence), \
        sentence


def test_a_real_vllm_runs_text_names_its_stack_and_vllms_version(app_paths, run_cli):
    store_recorded(app_paths, "serve-vllm-cpu-tiny.events.jsonl", "m7i-box", VLLM, "m7i.large")
    shown = run_cli("runs", "show", VLLM)
    assert shown.code == 0, shown.stderr
    assert "serve       vllm (cpu, vLLM 0.32.0) · ready in 121.2 s" in shown.stdout, shown.stdout
