"""An inference sweep as rows: one per compiled artefact (batch size x sequence length), no Qt.

Each row follows its events (compile, measure, latency windows) and, when the run ends, takes the
Result's figures for it (the exact throughput, tokens/s and the numerical check).  A check that
disagrees arrives early, on the warning the agent logs right after the compile (with the check's
figures attached), so the row is marked while the sweep goes on (DESIGN.md §10: a disagreement never
hides a figure; it marks the row everywhere it is shown).
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from app.core.model_text import check_problem, where_text

Key = tuple  # (batch size, sequence length or None), and for generate (..., (prompt tokens, new tokens))
def _lengths(event: dict[str, Any]) -> tuple[int, int] | None:
    if event.get("input_len") is None or event.get("output_len") is None:
        return None
    return int(event["input_len"]), int(event["output_len"])


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
    # generate: the sweep point's (prompt tokens, new tokens) and its per-call figures
    lengths: tuple[int, int] | None = None
    ttft_ms: list[float] = field(default_factory=list)
    tpot_ms: list[float] = field(default_factory=list)
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    output_tok_s: float | None = None
    usd_per_1m_output: float | None = None
    error: str | None = None  # a point that failed (a partial sweep): its sentence

    @property
    def key(self) -> Key:
        return (self.batch_size, self.seq_len) if self.lengths is None else (self.batch_size, self.seq_len,
                                                                             self.lengths)

    @property
    def label(self) -> str:
        text = where_text(self.batch_size, self.seq_len)
        return text if self.lengths is None else f"{text}, {self.lengths[0]} in / {self.lengths[1]} out"

    @property
    def short_label(self) -> str:
        """``b4`` or ``b4·s128`` (``b4·128/128`` for generate): a chart legend's word."""
        if self.lengths is not None:
            return f"b{self.batch_size}·{self.lengths[0]}/{self.lengths[1]}"
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

    def row(self, batch_size: int, seq_len: int | None, lengths: tuple[int, int] | None = None) -> SweepRow:
        if lengths is not None:  # generate: one row per (batch, prompt, new tokens) point
            gkey = (int(batch_size), None, tuple(lengths))
            if gkey not in self.rows:
                self.rows[gkey] = SweepRow(int(batch_size), None, lengths=(int(lengths[0]), int(lengths[1])))
            return self.rows[gkey]
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
        row = self.row(event["batch_size"], event.get("seq_len"), _lengths(event))
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

    def on_gen_call(self, event: dict[str, Any]) -> None:
        """A generate call: a timed one joins its row's TTFT and TPOT (medians shown until the Result's)."""
        row = self.row(event["batch_size"], None, _lengths(event))
        if event.get("stage") != "measure" or row.final:
            return
        self.version += 1
        row.requests += 1
        for values, key in ((row.ttft_ms, "ttft_ms"), (row.tpot_ms, "tpot_ms")):
            if event.get(key) is not None:
                values.append(float(event[key]))
        row.ttft_p50_ms = statistics.median(row.ttft_ms) if row.ttft_ms else None
        row.tpot_p50_ms = statistics.median(row.tpot_ms) if row.tpot_ms else None
        row.output_tok_s = event.get("output_tok_s", row.output_tok_s)

    def on_log(self, event: dict[str, Any]) -> None:
        """A check the agent logged (with its figures): mark its row now."""
        check = event.get("check")
        if not isinstance(check, dict):
            return
        self.version += 1
        if event.get("batch_size") is not None:
            self.row(event["batch_size"], event.get("seq_len"), _lengths(event)).check = check
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
            row.error = (measured.get("error") or {}).get("message")
            row.state, row.final = "failed" if measured.get("error") else "done", True
        costs = {(c.get("batch_size"), c.get("input_len"), c.get("output_len")): c.get("usd_per_1m_output_tokens")
                 for c in (result.get("cost") or {}).get("usd_per_1m_output_tokens") or []}
        for point in result.get("generate") or []:
            if point.get("batch_size") is None or point.get("input_len") is None:
                continue
            row = self.row(point["batch_size"], None, (point["input_len"], point["output_len"]))
            ttft, tpot = point.get("ttft_ms") or {}, point.get("tpot_ms") or {}
            row.ttft_p50_ms, row.ttft_p99_ms = ttft.get("p50"), ttft.get("p99")
            row.tpot_p50_ms, row.tpot_p99_ms = tpot.get("p50"), tpot.get("p99")
            row.output_tok_s = point.get("output_tok_s")
            row.requests = int(point.get("calls") or row.requests)
            row.compile_s = point.get("first_call_s", row.compile_s)
            row.check = point.get("check") or row.check
            row.usd_per_1m_output = costs.get((point["batch_size"], point["input_len"], point["output_len"]))
            row.error = (point.get("error") or {}).get("message")
            row.state = "failed" if point.get("error") else "done"
            row.final = True
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
    def generate(self) -> bool:
        """A generate sweep: rows are (batch, prompt, new tokens) points with TTFT and TPOT."""
        return any(row.lengths is not None for row in self.rows.values())

    @property
    def text(self) -> bool:
        """A text model's sweep (rows have sequence lengths): tokens/s is worth a column."""
        return any(row.seq_len is not None for row in self.rows.values()) or bool(self.seq_lens)
