"""Reports say how close each host came to its peak (MFU) and why a run measured with a target stopped."""
from __future__ import annotations

import copy
import csv
import io
from html import unescape

from app.reports.csv_report import render_csv
from app.reports.html import render_html
from tests.reports.test_reports import doc, sample  # noqa: F401  (the realistic store and its report)


def test_the_results_have_an_mfu_column_and_a_sentence_per_host(doc):  # noqa: F811
    html = unescape(render_html(doc))
    assert "<th>MFU</th>" in html
    # ViT-Base bf16 on both NeuronCores of the chip (2 x 95 dense TFLOP/s), each host's best repeat.
    assert ("vit_base_patch16_224 on trn1.2xlarge used 5.6% of the NeuronCores' bf16 peak "
            "(10.6 of 190 TFLOP/s).") in html
    assert "vit_base_patch16_224 on inf2.xlarge used 4.4% of the NeuronCores' bf16 peak (8.31 of 190 TFLOP/s)." in html
    # The BERT sweeps were recorded without FLOPs: no figure, and the reason, never a zero.
    assert "MFU N/A on inf1.xlarge, inf2.xlarge, g5.xlarge: the run's FLOPs per sample were not counted" in html
    rows = {(r["label"], r["batch_size"]): r for r in csv.DictReader(io.StringIO(render_csv(doc)))}
    assert float(rows[("trn1.2xlarge", "32")]["mfu"]) > 0.05
    assert rows[("g5.xlarge", "16")]["mfu"] == "N/A" and rows[("g5.xlarge", "16")]["stopped_by"] == "N/A"


def test_a_run_measured_until_its_figure_was_known_says_how_it_stopped(doc):  # noqa: F811
    doc = copy.deepcopy(doc)
    trn1 = next(r for r in doc["rows"] if r["label"] == "trn1.2xlarge")
    trn1.update(stopped_by="target_ci", target_ci_pct=2.0, ci_pct=1.87)
    inf2 = next(r for r in doc["rows"] if r["label"] == "inf2.xlarge" and r["workload"] == "train")
    inf2.update(stopped_by="steps", target_ci_pct=2.0, ci_pct=3.4)
    html = unescape(render_html(doc))
    assert f"{trn1['ref']} (trn1.2xlarge) stopped ±2 % reached (±1.9 %)." in html
    assert f"{inf2['ref']} (inf2.xlarge) stopped at --steps, ±2 % not reached (±3.4 %)." in html
    assert "Runs with a target (--target-ci PCT) measured until the 95% interval was within ±PCT %" in html
