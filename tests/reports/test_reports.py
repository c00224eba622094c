"""Reports from a realistic run store: HTML (one file), PDF (rendered with poppler), CSV and JSON."""
from __future__ import annotations

import copy
import csv
import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from app.core.compare import CompareOptions, compare_runs
from app.core.compile_cache import cache_state_of_events
from app.core.decision import summary
from app.reports.csv_report import COLUMNS, render_csv
from app.reports.html import render_html
from app.reports.json_report import render_json
from app.reports.model import REPORT_SCHEMA, RunMaterial, build_report
from app.reports.svg import nice_ticks
from app.services.pricing import load_pricebook
from app.services.reporting import load_runs
from app.services.store import RunStore
from tests.reports.sample_store import populate


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    from app.paths import AppPaths

    paths = AppPaths.resolve(tmp_path_factory.mktemp("report-data"))
    ids = populate(paths)
    return paths, ids


def _all_ids(ids):
    return [run_id for group in ids.values() for run_id in group]


@pytest.fixture(scope="module")
def doc(sample):
    paths, ids = sample
    with RunStore(paths.runs_db) as store:
        runs = load_runs(store, _all_ids(ids))
        compare_doc = compare_runs(runs, load_pricebook(paths),
                                   CompareOptions(max_p99_ms=10, min_throughput=300, epochs=3,
                                                  samples_per_epoch=1_281_167))
        materials = [RunMaterial(r, store.telemetry(r.run_id),
                                 cache_state_of_events(store.events(r.run_id, types=("log",)))) for r in runs]
    return build_report(materials, compare_doc, "neuronbench test", 1_795_000_000.0, summary(compare_doc))


class _Refs(HTMLParser):
    """Collects everything in a page that could make a browser fetch something."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("src", "href", "xlink:href", "srcset", "data", "poster", "action", "background"):
                self.refs.append((tag, name, value or ""))


def test_html_is_one_self_contained_file(doc):
    html = render_html(doc)
    parser = _Refs()
    parser.feed(html)
    assert parser.refs == []  # no src/href at all: nothing to fetch, no file beside it
    assert "script" not in parser.tags and "link" not in parser.tags and "iframe" not in parser.tags
    assert "url(" not in html and "@import" not in html
    assert parser.tags.count("svg") >= 6  # throughput, $/1M and latency charts, utilisation


def test_html_leads_with_the_decision_and_shows_price_source_date_and_methodology(doc):
    html = render_html(doc)
    summary_at, results_at = html.index("Decision summary"), html.index("<h2>Results</h2>")
    assert summary_at < results_at
    assert ("inf2.xlarge trains vit_base_patch16_224 at 1.38× the samples per dollar of trn1.2xlarge and 0.78× its "
            "samples per second (3 and 3 repeats; the 95% intervals do not overlap).") in html
    assert html.index("inf2.xlarge trains") < html.index("serves bert-large")  # the chosen baseline's measure first
    for phrase in ("Methodology", "warm-up", "Compile handling", "Repeats", "bootstrap 95% interval",
                   "snapshot date unknown", "@00148f2a", "Environment", "Utilisation over time", "cached", "cold"):
        assert phrase.lower() in html.lower(), phrase
    assert "no public on-demand price for trn2.48xlarge" in html


def test_large_figures_are_printed_in_full_not_in_e_notation(doc):
    fast = copy.deepcopy(doc)  # a small model served at batch 16 does tens of thousands of inferences a second
    for row in fast["rows"] + fast["groups"]:
        if row.get("throughput"):
            row["throughput"] *= 100
    html = render_html(fast)
    assert not re.search(r"\d\.\d+e[+-]\d\d", html)
    assert f"{fast['rows'][0]['throughput']:,.0f}" in html


def test_html_escapes_what_users_typed():
    from app.reports.blocks import Table
    from app.reports.html import render_block

    cell = render_block(Table(("Host",), (("<script>alert(1)</script>",),)))
    assert "<script>" not in cell and "&lt;script&gt;" in cell


def test_csv_has_one_row_per_run_and_batch_size_and_no_blank_or_zero_for_missing(doc):
    rows = list(csv.DictReader(io.StringIO(render_csv(doc))))
    assert len(rows) == 7 + 2 + 3 + 3  # 7 training runs; inference sweeps of 2, 3 and 3 batch sizes
    assert tuple(rows[0].keys()) == COLUMNS
    assert all(value != "" for row in rows for value in row.values())
    trn2 = next(r for r in rows if r["instance_type"] == "trn2.48xlarge")
    assert trn2["usd_per_hour"] == "N/A" and trn2["usd_per_1m"] == "N/A"
    inf2_b1 = next(r for r in rows if r["instance_type"] == "inf2.xlarge" and r["batch_size"] == "1")
    assert round(float(inf2_b1["usd_per_1m"]), 2) == 0.65 and inf2_b1["price_date"] == "snapshot date unknown"
    assert {r["compile_cache"] for r in rows if r["instance_type"] == "trn1.2xlarge"} == {"cold", "cached"}


def test_json_is_versioned_and_keeps_missing_values_null(doc):
    data = json.loads(render_json(doc))
    assert data["schema"] == REPORT_SCHEMA == "neuronbench.report/1"
    assert len(data["rows"]) == 15 and len(data["runs"]) == 10
    trn2 = next(r for r in data["rows"] if r["instance_type"] == "trn2.48xlarge")
    assert trn2["usd_per_1m"] is None and trn2["price_performance_vs_baseline"] is None
    run = next(r for r in data["runs"] if r["label"] == "trn1.2xlarge")
    assert run["telemetry"]["buckets"] > 0 and "NeuronCore util" in run["telemetry"]["series"]
    assert run["fingerprint"]["torch_neuronx"] == "2.9.0.2.11"
    assert data["methodology"]["prices"][0]["date"] == "snapshot date unknown"


@pytest.mark.skipif(not shutil.which("pdftoppm"), reason="poppler-utils is installed by tests/system_packages.sh")
def test_pdf_renders_to_a4_pages_with_the_reports_text(sample, run_cli, tmp_path):
    paths, ids = sample
    out_pdf = tmp_path / "report.pdf"
    out = run_cli("report", *_all_ids(ids), "--format", "pdf", "--output", str(out_pdf),
                  "--data-dir", str(paths.data.parent), "--max-p99-ms", "10", "--min-throughput", "300")
    assert out.code == 0, out.stderr
    info = subprocess.run(["pdfinfo", str(out_pdf)], capture_output=True, text=True, check=True).stdout
    pages = int(next(line.split()[-1] for line in info.splitlines() if line.startswith("Pages:")))
    assert "595 x 842 pts (A4)" in info
    assert 3 <= pages <= 20
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(out_pdf), str(tmp_path / "page")], check=True)
    images = sorted(tmp_path.glob("page-*.png"))
    assert len(images) == pages
    assert all(p.stat().st_size > 3000 for p in images)  # every page drew something
    text = subprocess.run(["pdftotext", "-layout", str(out_pdf), "-"], capture_output=True, text=True,
                          check=True).stdout
    flat = " ".join(text.split())
    for phrase in ("Decision summary", "Results", "Utilisation over time", "Methodology", "Environment", "Prices",
                   "Runs", "snapshot date unknown", f"page 1 of {pages}", f"page {pages} of {pages}",
                   "the samples per dollar of trn1.2xlarge"):
        assert phrase in flat, phrase
    assert text.count("\f") >= pages - 1  # real page breaks


def test_report_refuses_a_missing_folder_and_an_unknown_run(sample, run_cli, tmp_path):
    paths, ids = sample
    data = ["--data-dir", str(paths.data.parent)]
    out = run_cli("report", _all_ids(ids)[0], "--format", "html", "--output", str(tmp_path / "no" / "r.html"), *data)
    assert out.code == 2 and "does not exist" in out.stderr
    out = run_cli("report", "20991231-000000-abcdef", "--format", "csv", "--output", str(tmp_path / "r.csv"), *data)
    assert out.code == 1 and "no run '20991231-000000-abcdef' in the store" in out.stderr
    assert not list(tmp_path.glob("*r.csv*"))  # nothing half-written


def test_axis_ticks_are_round_numbers():
    assert nice_ticks(0, 1433) == [0, 500, 1000, 1500]
    assert nice_ticks(0, 0.65) == [0, 0.2, 0.4, 0.6, 0.8]
    assert nice_ticks(0, 100) == [0, 20, 40, 60, 80, 100]
