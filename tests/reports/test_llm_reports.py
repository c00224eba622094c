"""A report of a generate run and a serve run: each workload its own section, columns and chart (issue 28 part 2).

The runs are real ones recorded on this machine (tests/data/runs): a generate sweep of the tiny Llama and a real
`transformers serve` with the MLPerf server SLO's rate search, stored as `neuronbench run` stores them.
"""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.reports.test_monitor_flops import store_recorded

GENERATE, SERVE = "20261128-100000-aaaaaa", "20261128-114732-11a713"


@pytest.fixture
def llm_runs(app_paths):
    store_recorded(app_paths, "generate-cpu-tiny.events.jsonl", "cpu-box", GENERATE, "c7i.large")
    store_recorded(app_paths, "serve-transformers-tiny-cpu.events.jsonl", "cpu-box2", SERVE, "c7i.large")
    return app_paths


def test_the_html_gives_generate_and_serve_their_own_sections(llm_runs, run_cli, tmp_path):
    path = tmp_path / "r.html"
    out = run_cli("report", GENERATE, SERVE, "--format", "html", "--output", str(path))
    assert out.code == 0, out.stderr
    html = path.read_text()
    title = re.search(r"<h1>(.*?)</h1>", html).group(1)
    assert "tiny-random-llama generation" in title and "tiny-random-llama serving" in title
    assert "inference" not in title
    assert "None" not in re.sub(r"<[^>]+>", " ", html)  # no "Batch None", no "batch None" chart category
    assert "<h3>hf:neuronbench/tiny-random-llama fp32 serving</h3>" in html
    # the serve section: its operating point, every load level with its error rate and SLO, and the knee chart
    assert "Operating point: the highest output tok/s that meets the SLO (p99 TPOT ≤ 100 ms, p99 TTFT ≤ 2000 ms)" \
        in html
    levels = re.search(r"<caption>R2 [^<]*per load level</caption>(.*?)</table>", html, re.S).group(1)
    assert [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<tr><td>(.*?)</td>", levels)] == \
        ["c=1", "c=2", "c=4", "40.3/s"]
    assert "<th>Error rate</th>" in levels and "<th>SLO</th>" in levels
    # a run recorded before the error rate was kept: its errors over its requests (none of them failed)
    assert re.findall(r"<tr><td>c=1</td>(?:<td[^>]*>[^<]*</td>){2}<td[^>]*>([^<]*)</td>", levels) == ["0%"]
    assert 'aria-label="p99 TTFT by output tok/s · hf:neuronbench/tiny-random-llama serving"' in html
    assert "SLO p99 TTFT 2000 ms" in html and 'stroke-dasharray="6 4"' in html
    # generate: one bar per sweep point, named by its shape
    assert "b1 · 16/8" in html and "b2 · 16/8" in html


def test_the_pdf_columns_keep_their_words_whole(llm_runs, run_cli, tmp_path):
    path = tmp_path / "r.pdf"
    assert run_cli("report", GENERATE, SERVE, "--format", "pdf", "--output", str(path)).code == 0
    text = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout
    header = next(line for line in text.splitlines() if line.split()[:3] == ["Host", "Run", "Batch"])
    assert "TTFT" in header.split() and "TPOT" in header.split()  # neither cut to "Batc" / "TPO"
    words = set(text.split())
    assert not words & {"Batc", "Chec", "TPO", "TTF", "Ru"}, words & {"Batc", "Chec", "TPO", "TTF", "Ru"}
    assert "Batch None" not in " ".join(text.split())
