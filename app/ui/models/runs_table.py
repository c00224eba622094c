"""The run store's runs as a table model: one row per run, display text plus a value to sort by."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QPixmap

from app.core.clock_text import local_time_text
from app.core.cost import TYPE_FROM_AFTER_RUN, TYPE_FROM_PROBE, TYPE_FROM_PROFILE, type_from_label
from app.core.model_text import model_label, model_tooltip
from app.core.neuron_options import neuron_settings
from app.core.numbers import figure
from app.core.numbers import usd as usd_text
from app.core.partial_runs import partial_sentence
from app.core.quoting import SENTENCE_LIMIT, clean
from app.core.runrecord import StoredRun
from app.ui import theme

SORT_ROLE = Qt.ItemDataRole.UserRole + 1
RUN_ROLE = Qt.ItemDataRole.UserRole + 2
COLUMNS = ("Run", "Started", "Host", "Instance type", "Workload", "Model", "Backend", "Status", "Result",
           "$ per 1M")
COLUMN_TIPS = {
    "Run": "the run's id (newest first); `neuronbench runs show ID` prints it in full",
    "Started": "when the run was started (local time)",
    "Host": "the host it ran on",
    "Instance type": "the host's instance type: from its probe, its profile, or declared after the run",
    "Workload": "training or inference",
    "Model": "the model benchmarked: its source (timm, torchvision, hf, file) and name, the hf task",
    "Backend": "the backend the agent used (neuron, xla, cuda, cpu); on Neuron its stack (native or xla) and the "
               "options the run set: eager mode, compiler flags and where they went, a cold compile",
    "Status": "ok, partial (a sweep point failed; the finished ones are kept), failed, cancelled; running while "
              "recorded; unfinished when the app stopped following it",
    "Result": "training: samples per second; inference: the best inferences per second over the batch sizes",
    "$ per 1M": "cost per million samples (training) or inferences (best batch size), at the price when it ran",
}
# The store's statuses, in the colours of theme.STATUS.
_DOT = {"ok": "ok", "partial": "partial", "running": "running", "failed": "failed", "cancelled": "cancelled",
        "interrupted": "failed", "unfinished": "detached"}
_WORKLOAD = {"train": "training", "infer": "inference", "generate": "generate"}


def headline(run: StoredRun) -> tuple[float | None, str]:
    """(the number a row shows, its text): samples/s for training, the best inferences/s for inference."""
    result = run.result or {}
    if run.workload == "train":
        value = (result.get("train") or {}).get("throughput_samples_per_s")
        return value, "N/A" if value is None else f"{figure(value)} samples/s"
    if run.workload == "generate":  # the best output tok/s over the sweep points
        points = [p for p in result.get("generate") or [] if p.get("output_tok_s") is not None]
        if not points:
            return None, "N/A"
        top = max(points, key=lambda p: p["output_tok_s"])
        return top["output_tok_s"], (f"{figure(top['output_tok_s'])} output tok/s (batch {top.get('batch_size')}, "
                                     f"{top.get('input_len')}/{top.get('output_len')})")
    rows = [r for r in result.get("infer") or [] if r.get("throughput_per_s") is not None]
    if not rows:
        return None, "N/A"
    best = max(rows, key=lambda r: r["throughput_per_s"])
    return best["throughput_per_s"], f"{figure(best['throughput_per_s'])} inf/s (batch {best.get('batch_size')})"


def usd_per_million(run: StoredRun) -> float | None:
    """The stored cost per 1M of work (for inference, at the batch size of the headline number)."""
    cost = (run.result or {}).get("cost") or {}
    if run.workload == "train":
        return cost.get("usd_per_1m_samples")
    best = headline(run)[0]
    if run.workload == "generate":  # $ per 1M output tokens at the headline's point
        points = (run.result or {}).get("generate") or []
        prices = cost.get("usd_per_1m_output_tokens") or []
        for point in points:
            if best is not None and point.get("output_tok_s") == best:
                key = (point.get("batch_size"), point.get("input_len"), point.get("output_len"))
                return next((c.get("usd_per_1m_output_tokens") for c in prices
                             if (c.get("batch_size"), c.get("input_len"), c.get("output_len")) == key), None)
        return None
    per_batch = {r.get("batch_size"): r.get("usd_per_1m") for r in cost.get("usd_per_1m_inferences") or []}
    for row in (run.result or {}).get("infer") or []:
        if best is not None and row.get("throughput_per_s") == best:
            return per_batch.get(row.get("batch_size"))
    return None


def instance_tooltip(run: StoredRun) -> str:
    """Where the row's instance type came from (the price follows it), or how to give the run one."""
    if not run.instance_type:
        return ("the host did not report its instance type, so the run has no price: \"Declare instance type…\" "
                "names it")
    source = ((run.result or {}).get("cost") or {}).get("instance_type_from") or \
        (run.declared or {}).get("source") or (TYPE_FROM_PROFILE if run.declared else TYPE_FROM_PROBE)
    text = f"{run.instance_type}, {type_from_label(source)}"
    declared_at = (run.declared or {}).get("declared_at")
    if source == TYPE_FROM_AFTER_RUN and declared_at:
        text += f" on {started_text(declared_at)}"
    return text


def started_text(seconds: float | None) -> str:
    return local_time_text(seconds, "%Y-%m-%d %H:%M:%S", missing="")


def model_text(run: StoredRun) -> str:
    """``hf bert-large-uncased (classification)``, ``file two_tower.py``, ``timm vit_tiny_patch16_224``."""
    spec = run.spec or {}
    return model_label(run.model or spec.get("model") or "", spec.get("task") or "", spec.get("model_file"))


def backend_text(run: StoredRun) -> str:
    """``neuron (native, eager, cold compile, flags ... (NEURON_CC_FLAGS))``: the backend and the Neuron options."""
    result, spec = run.result or {}, run.spec or {}
    backend = result.get("backend") or spec.get("backend") or ""
    stack = (result.get("backend_detail") or {}).get("stack") or spec.get("neuron_stack") or None
    words = ([stack] if stack else []) + [w for w in neuron_settings(spec, stack) if not w.startswith("stack ")]
    return backend + (f" ({', '.join(words)})" if words else "")


def _cells(run: StoredRun) -> list[tuple[str, Any]]:
    """(text, sort value) per column."""
    result = run.result or {}
    value, text = headline(run)
    usd = usd_per_million(run)
    started = run.started_at or run.created_at
    return [
        (run.run_id, run.run_id),
        (started_text(started), started or 0.0),
        (run.host, run.host.lower()),
        (run.instance_type or "unknown", run.instance_type or ""),
        (_WORKLOAD.get(run.workload or "", run.workload or ""), run.workload or ""),
        (model_text(run), model_text(run).lower()),
        (backend_text(run), result.get("backend") or ""),
        (run.status, run.status),
        (text, -1.0 if value is None else value),  # N/A sorts below every measured number
        (usd_text(usd), float("inf") if usd is None else usd),
    ]


class RunsTableModel(QAbstractTableModel):
    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.runs: list[StoredRun] = []
        self._cells: list[list[tuple[str, Any]]] = []
        self._dots: dict[str, QPixmap] = {}

    def set_runs(self, runs: list[StoredRun]) -> None:
        self.beginResetModel()
        self.runs = list(runs)
        self._cells = [_cells(run) for run in self.runs]
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.runs)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Orientation.Horizontal:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMN_TIPS[COLUMNS[section]]
        return None

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        run = self.runs[index.row()]
        text, sort_value = self._cells[index.row()][index.column()]
        column = COLUMNS[index.column()]
        if role == Qt.ItemDataRole.DisplayRole:
            return clean(text)  # host and model names, instance types: a user's or a host's text
        if role == SORT_ROLE:
            return sort_value
        if role == RUN_ROLE:
            return run
        if role == Qt.ItemDataRole.DecorationRole and column == "Status":
            return self._dot(run.status)
        if role == Qt.ItemDataRole.TextAlignmentRole and column in ("Result", "$ per 1M"):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.ToolTipRole:
            return clean(self._tooltip(run, column), SENTENCE_LIMIT)
        return None

    def _dot(self, status: str) -> QPixmap:
        if status not in self._dots:
            self._dots[status] = theme.status_dot(_DOT.get(status, "unknown"))
        return self._dots[status]

    @staticmethod
    def _tooltip(run: StoredRun, column: str) -> str:
        result = run.result or {}
        if column == "Status":
            error = (result.get("error") or {}).get("message")
            if run.status == "unfinished":
                return "the app stopped following this run before it ended: Re-attach to follow it again"
            if run.status == "partial":
                return partial_sentence(result)
            return error or run.status
        if column == "Instance type":
            return instance_tooltip(run)
        if column == "Model":
            spec = run.spec or {}
            return model_tooltip(run.model or spec.get("model") or "", spec.get("model_file"))
        if column == "$ per 1M":
            cost = result.get("cost") or {}
            if cost.get("usd_per_hour") is not None:
                return f"{usd_text(cost['usd_per_hour'])}/h, {cost.get('price_source')} ({cost.get('price_date')})"
            return cost.get("price_note") or "no cost: the run has no result, or was recorded without prices"
        return COLUMN_TIPS[column]
