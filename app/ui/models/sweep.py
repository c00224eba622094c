"""An inference sweep as rows: one per compiled artefact (batch size x sequence length), no Qt.

Each row follows its events (compile, measure, latency windows) and, when the run ends, takes the
Result's figures for it (the exact throughput, tokens/s and the numerical check).  A check that
disagrees arrives early, on the warning the agent logs right after the compile (with the check's
figures attached), so the row is marked while the sweep goes on (DESIGN.md §10: a disagreement never
hides a figure; it marks the row everywhere it is shown).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.core.model_text import check_problem, where_text

Key = tuple[int, int | None]  # (batch size, sequence length or None)
STATES = {"setup": "setting up", "compile": "compiling", "warmup": "warming up", "measure": "measuring"}


@dataclass
class SweepRow:
    batch_size: int
    seq_len: int | None
    state: str = "waiting"
    compile_s: float | None = None
    p50_ms: float | None = None
    p90_ms: float | None = None
    p99_ms: float | None = None
    requests: int = 0
    samples_per_s: float | None = None
    tokens_per_s: float | None = None
    check: dict[str, Any] | None = None
    final: bool = False  # the figures are the Result's, not the latest window's

    @property
    def key(self) -> Key:
        return self.batch_size, self.seq_len

    @property
    def label(self) -> str:
        return where_text(self.batch_size, self.seq_len)

    @property
    def short_label(self) -> str:
        """``b4`` or ``b4·s128``: a chart legend's word."""
        return f"b{self.batch_size}" + (f"·s{self.seq_len}" if self.seq_len is not None else "")

    @property
    def problem(self) -> str | None:
        """The sentence when this artefact gives wrong answers (``batch 4: compiled model disagrees ...``)."""
        return check_problem(self.check, self.label)


class Sweep:
    """The rows of one inference run, in the order they started; ``train_check`` for a training run."""

    def __init__(self, spec: Any) -> None:
        self.rows: dict[Key, SweepRow] = {}
        self.train_check: dict[str, Any] | None = None
        self.seq_lens = tuple(getattr(spec, "seq_lens", ()) or ())
        self.version = 0  # counts changes: a view redraws the rows only when it moved

    def row(self, batch_size: int, seq_len: int | None) -> SweepRow:
        key = (int(batch_size), None if seq_len is None else int(seq_len))
        unnamed = (key[0], None)
        if key not in self.rows and key[1] is not None and unnamed in self.rows:
            # A length left to the model's default is first named at the end of setup: the row started
            # without it takes it (a dict keeps its order only if rebuilt).
            self.rows = {(key if k == unnamed else k): row for k, row in self.rows.items()}
            self.rows[key].seq_len = key[1]
        if key not in self.rows:
            self.rows[key] = SweepRow(*key)
        return self.rows[key]

    def on_phase(self, event: dict[str, Any]) -> None:
        if event.get("batch_size") is None:
            return
        self.version += 1
        row = self.row(event["batch_size"], event.get("seq_len"))
        if event["state"] == "start" and event["name"] in STATES:
            row.state = STATES[event["name"]]
        elif event["state"] == "end":
            if event["name"] == "compile" and "seconds" in event:
                row.compile_s = float(event["seconds"])
            elif event["name"] == "measure":
                row.state = "done"

    def on_latency(self, event: dict[str, Any], samples_per_s: float | None) -> None:
        self.version += 1
        row = self.row(event["batch_size"], event.get("seq_len"))
        row.p50_ms, row.p90_ms, row.p99_ms = event["p50_ms"], event["p90_ms"], event["p99_ms"]
        row.requests += int(event.get("count") or 0)
        if samples_per_s is not None:
            row.samples_per_s = samples_per_s
            row.tokens_per_s = samples_per_s * row.seq_len if row.seq_len else None

    def on_log(self, event: dict[str, Any]) -> None:
        """A check the agent logged (with its figures): mark its row now."""
        check = event.get("check")
        if not isinstance(check, dict):
            return
        self.version += 1
        if event.get("batch_size") is not None:
            self.row(event["batch_size"], event.get("seq_len")).check = check
        else:
            self.train_check = check

    def on_result(self, result: dict[str, Any]) -> None:
        """The Result's figures replace the windows' for every row it has."""
        self.version += 1
        for measured in result.get("infer") or []:
            if measured.get("batch_size") is None:
                continue
            row = self.row(measured["batch_size"], measured.get("seq_len"))
            latency = measured.get("latency_ms") or {}
            row.p50_ms, row.p90_ms, row.p99_ms = latency.get("p50"), latency.get("p90"), latency.get("p99")
            row.requests = int(measured.get("iterations") or row.requests)
            row.samples_per_s = measured.get("throughput_per_s")
            row.tokens_per_s = measured.get("tokens_per_s")
            row.compile_s = measured.get("compile_s", row.compile_s)
            row.check = measured.get("check") or row.check
            row.state, row.final = "done", True
        train = result.get("train") or {}
        if train.get("check"):
            self.train_check = train["check"]

    # ------------------------------------------------------------ what the views show
    def problems(self) -> list[str]:
        """One sentence per artefact whose compiled model gives wrong answers, in sweep order."""
        found = [row.problem for row in self.rows.values() if row.problem]
        training = check_problem(self.train_check, "training step 1")
        return found + ([training] if training else [])

    @property
    def text(self) -> bool:
        """A text model's sweep (rows have sequence lengths): tokens/s is worth a column."""
        return any(row.seq_len is not None for row in self.rows.values()) or bool(self.seq_lens)
