"""neuron-monitor's own FLOP/s beside ours, in compare (JSON and table) and the reports (HTML, PDF, CSV).

The Neuron run is a recorded one (tests/data/runs/infer-neuron-inf2-doubles.events.jsonl): the product end
to end on an inf2.xlarge's test doubles, neuron-monitor replaying its recorded inf2 stream (29-32 TFLOP/s a
core while serving).  Beside it, a recorded CPU run: no monitor, so nothing extra is shown for it.
"""
from __future__ import annotations

import csv
import io
import subprocess

import pytest

from app.services.pricing import load_pricebook
from app.services.recorder import RunRecorder
from app.services.store import RunStore
from tests.ui.conftest import recorded

NEURON, CPU = "20261125-223700-1f2a3b", "20261123-100000-cccccc"
NEURON_STREAM = "infer-neuron-inf2-doubles.events.jsonl"


def store_recorded(paths, name: str, host: str, run_id: str, instance_type: str) -> dict:
    """Store a recorded run as ``neuronbench run`` stores it (every event, then the priced Result)."""
    events = recorded(name)
    result = next(e for e in events if e["type"] == "result")["result"]
    with RunStore(paths.runs_db) as store:
        recorder = RunRecorder.start(store, load_pricebook(paths), host, result["spec"], run_id,
                                     declared_type=instance_type, declared_region="us-east-1")
        for event in events:
            recorder(event)
        return recorder.finish(dict(result, run_id=run_id, host=host))


def monitor_figure() -> float:
    """What neuron-monitor counted while the recorded run measured: both NeuronCores' mean FLOP/s, in TFLOP/s."""
    result = next(e for e in recorded(NEURON_STREAM) if e["type"] == "result")["result"]
    return sum(d["flops_mean"] for d in result["telemetry"]["measure"]["devices"]) / 1e12


@pytest.fixture
def runs(app_paths):
    store_recorded(app_paths, NEURON_STREAM, "inf2-box", NEURON, "inf2.xlarge")
    store_recorded(app_paths, "infer-cpu-tiny.events.jsonl", "cpu-box", CPU, "c7i.xlarge")
    return app_paths


def test_compare_shows_neuron_monitors_figure_beside_mfu_and_no_column_without_one(runs, run_cli):
    tflops = monitor_figure()
    assert 2 * 29 < tflops < 2 * 32.1  # the recording's steady serving on both cores
    doc = run_cli("compare", NEURON, CPU, "--json").json()
    rows = {r["run_id"]: r for r in doc["rows"]}
    assert rows[NEURON]["monitor_tflops"] == pytest.approx(tflops) and rows[NEURON]["mfu"] is not None
    assert [r["monitor_tflops"] for r in doc["rows"] if r["run_id"] == CPU] == [None, None]  # batch 1 and 4
    assert next(g for g in doc["groups"] if NEURON in g["run_ids"])["monitor_tflops"] == pytest.approx(tflops)

    table = run_cli("compare", NEURON, CPU).stdout.splitlines()
    header = next(line for line in table if line.startswith("RUN"))
    assert "MFU" in header and "MONITOR TFLOP/s" in header
    neuron = next(line for line in table if line.startswith(NEURON))
    assert f"{tflops:.4g}" in neuron.split()
    only_cpu = run_cli("compare", CPU).stdout
    assert "MFU" in only_cpu and "MONITOR" not in only_cpu  # no empty column where no run had neuron-monitor


def test_reports_show_it_in_the_table_and_the_sentence(runs, run_cli, tmp_path):
    tflops = monitor_figure()
    html_path, csv_path, cpu_path = tmp_path / "r.html", tmp_path / "r.csv", tmp_path / "cpu.html"
    assert run_cli("report", NEURON, CPU, "--format", "html", "--output", str(html_path)).code == 0
    html = html_path.read_text()
    assert "<th>neuron-monitor TFLOP/s</th>" in html and f'<td class="num">{tflops:.4g}</td>' in html
    assert "vit_tiny_patch16_224 on inf2.xlarge at batch 4 (its best) used " in html
    assert f"; neuron-monitor {tflops:.4g} TFLOP/s." in html

    assert run_cli("report", NEURON, CPU, "--format", "csv", "--output", str(csv_path)).code == 0
    rows = {(r["run_id"], r["batch_size"]): r for r in csv.DictReader(io.StringIO(csv_path.read_text()))}
    assert float(rows[(NEURON, "4")]["monitor_tflops"]) == pytest.approx(tflops)
    assert rows[(CPU, "4")]["monitor_tflops"] == "N/A"  # the CSV's columns are fixed: N/A, as its MFU

    assert run_cli("report", CPU, "--format", "html", "--output", str(cpu_path)).code == 0
    cpu_only = cpu_path.read_text()
    assert "MFU" in cpu_only and "neuron-monitor TFLOP/s" not in cpu_only and "; neuron-monitor" not in cpu_only


def test_the_pdf_has_the_column_and_the_sentence(runs, run_cli, tmp_path):
    out_pdf = tmp_path / "r.pdf"
    out = run_cli("report", NEURON, "--format", "pdf", "--output", str(out_pdf))
    assert out.code == 0, out.stderr
    layout = subprocess.run(["pdftotext", "-layout", str(out_pdf), "-"], capture_output=True, text=True,
                            check=True).stdout
    tflops = f"{monitor_figure():.4g}"
    header = next(line for line in layout.splitlines() if line.startswith("Host") and "MFU" in line)
    # every header word whole (issue 28: narrow columns wrapped "Batch" and "TPOT" letter by letter)
    assert header.split()[-2:] == ["neuron-", "Check"]  # a break at the hyphen is a typesetter's, not a cut word
    row = next(line.split() for line in layout.splitlines() if line.split()[:2] == ["inf2.xlarge", "R1"])
    assert row[-2:] == [tflops, "ok"] and row[-3].endswith("%")  # beside the MFU
    assert f"; neuron-monitor {tflops} TFLOP/s." in " ".join(layout.split())
