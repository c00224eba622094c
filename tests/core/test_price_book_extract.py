"""The copy of the catalog's vms.csv the shipped price book is built from holds the whole source file.

The figures it is checked against (resources/pricing/extracts/vms-00148f2a.json) were read from the
source file itself: its length and where three rows start.  A dropped block (the f1/f2 families were
once missing), a moved row (a g6f.4xlarge row once was) or a changed figure must each be caught.
"""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PRICING = REPO / "resources" / "pricing"
EXTRACT = PRICING / "extracts" / "vms-00148f2a.csv"
RECORDED = json.loads(EXTRACT.with_suffix(".json").read_text(encoding="utf-8"))
COMMIT = "00148f2af3672e2229b4f7bf8157d5a3f36e3c35"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, PRICING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def checker():
    return _load("check_extract")


@pytest.fixture(scope="module")
def lines() -> list[str]:
    return EXTRACT.read_text(encoding="utf-8").splitlines(keepends=True)


def test_the_extract_matches_every_figure_recorded_from_the_source(checker):
    assert RECORDED["source"]["commit"] == COMMIT
    assert checker.check(EXTRACT, RECORDED) == []
    found = checker.figures(EXTRACT)
    assert (found["rows"], found["source_characters"]) == (46_148, 3_654_773)


def test_the_fpga_families_are_in_it(lines):
    types = {line.split(",", 1)[0] for line in lines[1:]}
    assert {"f1.2xlarge", "f1.4xlarge", "f1.16xlarge", "f2.6xlarge", "f2.12xlarge", "f2.48xlarge"} <= types
    assert sum(line.startswith(("f1.", "f2.")) for line in lines) == 88


def _problems(checker, tmp_path: Path, lines: list[str]) -> list[str]:
    copy = tmp_path / EXTRACT.name
    copy.write_text("".join(lines), encoding="utf-8")
    return checker.check(copy, RECORDED)


def test_a_dropped_block_is_caught(checker, lines, tmp_path):
    without_fpga = [line for line in lines if not line.startswith(("f1.", "f2."))]
    problems = _problems(checker, tmp_path, without_fpga)
    assert any("46,060 data rows; 46,148 were recorded" in p for p in problems)
    assert any("3,646,518 characters; the source is 3,654,773" in p for p in problems)
    assert any(p.startswith("row f1.16xlarge apse2-az1 starts at None") for p in problems)


def test_a_single_dropped_row_is_caught_by_the_sources_length(checker, lines, tmp_path):
    middle = len(lines) // 2
    problems = _problems(checker, tmp_path, lines[:middle] + lines[middle + 1:])
    assert any("the source is 3,654,773" in p for p in problems)


def test_a_row_out_of_the_sources_order_is_caught(checker, lines, tmp_path):
    first_g6f = next(i for i, line in enumerate(lines) if line.startswith("g6f.4xlarge,"))
    moved = lines[:first_g6f] + lines[first_g6f + 1:first_g6f + 30] + [lines[first_g6f]] + lines[first_g6f + 30:]
    problems = _problems(checker, tmp_path, moved)
    assert any(p.startswith("lines out of the source's order") for p in problems)


def test_a_changed_digit_is_caught_by_the_digest(checker, lines, tmp_path):
    changed = list(lines)
    row = next(i for i, line in enumerate(changed) if line.startswith("f1.2xlarge,") and "us-east-1" in line)
    changed[row] = changed[row].replace(",1.65,", ",1.66,")
    problems = _problems(checker, tmp_path, changed)
    assert len(problems) == 1 and "SHA-256" in problems[0]


def test_the_shipped_book_is_what_the_script_builds_from_the_extract(tmp_path):
    out = tmp_path / "aws-instances.csv"
    assert _load("build_price_book").main([
        str(EXTRACT), "--commit", COMMIT, "--date", "unknown",
        "--keep", str(REPO / "tests" / "data" / "pricing" / "aws-instances.csv"), "--output", str(out)]) == 0
    assert out.read_bytes() == (PRICING / "aws-instances.csv").read_bytes()
