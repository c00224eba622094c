"""Comparisons and reports of stored runs: what ``neuronbench compare``/``report`` and the GUI's views share.

    comparison = compare_stored(store, book, ["20261120-…", …], CompareOptions(baseline=…))
    doc = report_document(store, comparison)          # neuronbench.report/1
    write_report(doc, "html", Path("report.html"))    # atomic: never half a file

Qt stays out of this module: the PDF writer (app.reports.pdf) loads it inside
its one function, only when a PDF is asked for.  Everything here may run on a
worker thread; the store is thread-safe (a connection per thread).
"""
from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import app
from app.core.compare import CompareError, CompareOptions, compare_runs
from app.core.compile_cache import cache_state_of_events
from app.core.decision import summary
from app.core.errors import BadSpecError
from app.core.job_cost import job_sentences
from app.core.pricebook import PriceBook
from app.core.runrecord import StoredRun
from app.reports import FORMATS
from app.reports.model import RunMaterial, build_report
from app.services.recorder import with_mfu
from app.services.store import RunStore

SUFFIXES = {fmt: f".{fmt}" for fmt in FORMATS}


@dataclass(frozen=True)
class Comparison:
    """The comparison document (``neuronbench.compare/1`` plus its ``summary`` sentences) and the runs in it."""

    doc: dict
    runs: list[StoredRun]


def load_runs(store: RunStore, refs: Sequence[str]) -> list[StoredRun]:
    """The runs named by ``refs`` (ids or unique prefixes), each once, in the order given."""
    runs: list[StoredRun] = []
    for ref in refs:
        run = store.load(ref)
        if all(r.run_id != run.run_id for r in runs):
            runs.append(run)
    return runs


def compare_stored(store: RunStore, book: PriceBook, refs: Sequence[str],
                   options: CompareOptions | None = None) -> Comparison:
    """Compare stored runs; a baseline not among ``refs`` is added first.

    Raises BadSpecError (one sentence) when the runs cannot be compared as asked.
    """
    options = options or CompareOptions()
    runs = load_runs(store, refs)
    if options.baseline and options.baseline not in {r.run_id for r in runs}:
        runs.insert(0, store.load(options.baseline))
    # A job tells a cold compile from a warm one by the compiler's lines in each run's log.
    states = {run.run_id: cache_state_of_events(store.events(run.run_id, types=("log",)))["state"]
              for run in runs} if options.job else None
    for run in runs:  # MFU against the current peak table, as prices come from the current price book
        if run.result:
            with_mfu(run.result)
    try:
        doc = compare_runs(runs, book, options, states)
    except CompareError as exc:
        raise BadSpecError(str(exc)) from None
    doc["summary"] = summary(doc) + job_sentences(doc)
    return Comparison(doc, runs)


def report_document(store: RunStore, comparison: Comparison, now: float | None = None) -> dict:
    """The report document: the comparison plus each run's telemetry and compile-cache state from the store."""
    materials = [RunMaterial(run, store.telemetry(run.run_id),
                             cache_state_of_events(store.events(run.run_id, types=("log",))))
                 for run in comparison.runs]
    return build_report(materials, comparison.doc, f"neuronbench {app.__version__}",
                        time.time() if now is None else now, comparison.doc["summary"])


def check_output(path: Path, fmt: str, what: str | None = None) -> Path:
    """``path`` expanded, or BadSpecError when it names a folder or sits in a folder that does not exist."""
    if fmt not in FORMATS:
        raise BadSpecError(f"{fmt!r} is not a report format (one of {', '.join(FORMATS)})")
    what = what or str(path)
    path = Path(path).expanduser()
    if path.is_dir():
        raise BadSpecError(f"{what} is a folder: name the file to write (e.g. report.{fmt})")
    if not path.parent.is_dir():
        raise BadSpecError(f"{what}: the folder {path.parent} does not exist")
    return path


def render_report(doc: dict, fmt: str, path: Path) -> None:
    """Write ``doc`` as ``fmt`` to ``path`` (not atomic: ``write_report`` is)."""
    if fmt == "pdf":
        from app.reports.pdf import write_pdf  # Qt is loaded only for PDFs

        write_pdf(doc, path)
        return
    if fmt == "html":
        from app.reports.html import render_html as render
    elif fmt == "csv":
        from app.reports.csv_report import render_csv as render
    else:
        from app.reports.json_report import render_json as render
    path.write_text(render(doc), encoding="utf-8")


def _umask() -> int:
    """The process umask, read without setting it where Linux allows (setting it races other threads' files)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    umask = os.umask(0o022)
    os.umask(umask)
    return umask


def write_report(doc: dict, fmt: str, path: str | os.PathLike[str]) -> Path:
    """Write the report next to ``path`` and rename it there: a failed render never leaves half a report."""
    output = check_output(Path(path), fmt)
    fd, tmp = tempfile.mkstemp(dir=output.parent, prefix=f".{output.name}.", suffix=".part")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp's 0600 would hide the report from whoever it is for
    try:
        render_report(doc, fmt, Path(tmp))
        os.replace(tmp, output)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return output


def export_runs(store_path: str | os.PathLike[str], book: PriceBook, run_ids: Sequence[str], fmt: str,
                path: str | os.PathLike[str], options: CompareOptions | None = None) -> Path:
    """One call for a worker thread: open the store, compare, build the report, write it; returns the file.

    The store is opened (and closed) here, so the calling thread's connection is never shared.
    """
    output = check_output(Path(path), fmt)
    with RunStore(store_path) as store:
        doc = report_document(store, compare_stored(store, book, run_ids, options))
    return write_report(doc, fmt, output)
