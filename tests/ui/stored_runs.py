"""Real runs in a real run store, for the history and compare views.

Three tiny runs on this computer through the real agent zipapp (LocalTransport +
RunSession + RunRecorder, as ``neuronbench run`` records them), on hosts declared
as trn1.2xlarge and inf2.xlarge (``hosts add NAME --local --instance-type T``),
so each run is priced from the shipped price book:

* ``train_trn1``: tiny ViT training at batch 8 on "trn1-box" (trn1.2xlarge)
* ``train_inf2``: the same training at batch 4 on "inf2-box" (inf2.xlarge)
* ``infer_inf2``: a traced-inference sweep at batch 1 and 2 on "inf2-box"

Recorded once per session (once for all xdist workers: tests/session_cache.py); tests that change the
store work on a copy (``copy_store``).
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from app.core.presets import TINY_VIT_ARGS
from app.paths import AppPaths
from app.services.pricing import load_pricebook
from app.services.recorder import run_recorded
from app.services.store import RunStore
from app.services.transport import LocalTransport
from remote_agent.protocol import RunSpec
from tests.session_cache import built_once, private_copy

TINY = {"model": "vit_tiny_patch16_224", "model_args": dict(TINY_VIT_ARGS), "backend": "cpu", "workers": 0}


def train_spec(batch: int) -> RunSpec:
    return RunSpec(workload="train", batch_sizes=(batch,), steps=10, warmup=3, **TINY)


def infer_spec() -> RunSpec:
    return RunSpec(workload="infer", batch_sizes=(1, 2), duration=0.3, min_iters=30, warmup=2, **TINY)


@dataclass(frozen=True)
class StoredRuns:
    paths: AppPaths
    train_trn1: dict
    train_inf2: dict
    infer_inf2: dict

    @property
    def ids(self) -> list[str]:
        return [self.train_trn1["run_id"], self.train_inf2["run_id"], self.infer_inf2["run_id"]]

    def by_id(self, run_id: str) -> dict:
        return next(r for r in (self.train_trn1, self.train_inf2, self.infer_inf2) if r["run_id"] == run_id)


def record_tiny_runs(paths: AppPaths) -> StoredRuns:
    book = load_pricebook(paths)
    with RunStore(paths.runs_db) as store:
        trn1 = run_recorded(LocalTransport(paths, host="trn1-box"), train_spec(8), store, book,
                            "trn1.2xlarge", "us-east-1")
        inf2 = LocalTransport(paths, host="inf2-box")
        train = run_recorded(inf2, train_spec(4), store, book, "inf2.xlarge", "us-east-1")
        infer = run_recorded(inf2, infer_spec(), store, book, "inf2.xlarge", "us-east-1")
    for result in (trn1, train, infer):
        assert result["status"] == "ok", result.get("error")
    return StoredRuns(paths, trn1, train, infer)


@pytest.fixture(scope="session")
def stored_runs(tmp_path_factory) -> StoredRuns:
    """Recorded once for the whole session, whatever the number of xdist workers (tests/session_cache.py);
    each worker reads its own copy of the data folder, so a test that writes to it (a setting, a host)
    never sees another worker's writes."""

    def record(folder: Path) -> dict:
        runs = record_tiny_runs(AppPaths.resolve(folder / "data"))
        return {"train_trn1": runs.train_trn1, "train_inf2": runs.train_inf2, "infer_inf2": runs.infer_inf2}

    folder, results = built_once(tmp_path_factory, "stored-runs", record)
    mine = private_copy(folder / "data", tmp_path_factory.mktemp("stored-runs") / "data")
    return StoredRuns(AppPaths.resolve(mine), **results)


@pytest.fixture
def copy_store(stored_runs, tmp_path) -> AppPaths:
    """A data folder of its own holding a copy of the stored runs (for tests that delete or add runs)."""
    paths = AppPaths.resolve(tmp_path / "copy")
    paths.runs_db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        source = Path(f"{stored_runs.paths.runs_db}{suffix}")
        if source.exists():
            shutil.copy(source, f"{paths.runs_db}{suffix}")
    return paths
