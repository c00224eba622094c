"""Compare's "Your job" box: the user sizes their whole job, and sees its hours and dollars on every host.

The figures are the comparison's (app.core.job_cost through ``compare``), computed on the
view's worker thread like the rest of the comparison; this box only reads the sizes
typed and shows the ``job`` block of the document that comes back.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDoubleSpinBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.core.job_cost import JobSize, JobSizeError, parse_count
from app.core.numbers import NA, figure
from app.core.quoting import clean
from app.ui import theme

COLUMNS = ("Host", "Workload", "Batch", "Hours cold", "Hours warm", "On-demand $ cold", "On-demand $ warm",
           "Spot $ cold", "Spot $ warm")
TIPS = {"Hours cold": "the job's work at the measured throughput plus one compile with an empty compile cache "
                      "(a new instance)",
        "Hours warm": "the same with the compile cache already holding the graphs (measured on a cached run)"}
WORKLOADS = {"train": "training", "infer": "inference"}


def _usd(value: float | None) -> str:
    return NA if value is None else f"${value:,.2f}"


class JobBox(QGroupBox):
    """Sizes in, figures out; ``changed`` when a valid size was typed (the view recomputes)."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Your job", parent)
        self.setToolTip("what your whole job would take and cost on each host compared: the measured throughput, "
                        "one compile (cold, and with the compile cache warm), on-demand and spot prices")
        self.epochs = QDoubleSpinBox()
        self.epochs.setRange(0.01, 1e6)
        self.epochs.setDecimals(2)
        self.epochs.setValue(1.0)
        self.epochs.setToolTip("passes over the dataset")
        self.dataset = QLineEdit()
        self.dataset.setPlaceholderText("e.g. 1281167")
        self.dataset.setMaximumWidth(self.fontMetrics().horizontalAdvance("0") * 18)
        self.dataset.setToolTip("samples in your dataset (ImageNet-1k: 1,281,167); 1.2M and 3e6 work too")
        self.requests = QLineEdit()
        self.requests.setPlaceholderText("e.g. 10M")
        self.requests.setMaximumWidth(self.fontMetrics().horizontalAdvance("0") * 18)
        self.requests.setToolTip("requests to serve, one inference each, at each batch size measured; for generate, "
                                 "N requests of the run's S prompt tokens in / N new tokens out")
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.table = QTableWidget(0, len(COLUMNS))
        self.table.setHorizontalHeaderLabels(COLUMNS)
        for index, name in enumerate(COLUMNS):
            self.table.horizontalHeaderItem(index).setToolTip(TIPS.get(name, name))
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)  # compact rows
        self.table.setVisible(False)

        inputs = QHBoxLayout()
        self.train_label = QLabel("Training:")
        inputs.addWidget(self.train_label)
        inputs.addWidget(self.epochs)
        inputs.addWidget(QLabel("epoch(s) ×"))
        inputs.addWidget(self.dataset)
        inputs.addWidget(QLabel("samples"))
        inputs.addSpacing(16)
        self.infer_label = QLabel("Inference:")
        inputs.addWidget(self.infer_label)
        inputs.addWidget(self.requests)
        inputs.addWidget(QLabel("requests"))
        inputs.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addLayout(inputs)
        layout.addWidget(self.problem)
        layout.addWidget(self.table)
        for edit in (self.dataset, self.requests):
            edit.editingFinished.connect(self._edited)
        self.epochs.editingFinished.connect(self._edited)
        self._last: JobSize | None = None
        self.has_problem = False

    # -- sizes ---------------------------------------------------------------------------------------
    def set_workloads(self, workloads: set[str]) -> None:
        """Offer only the sizes the compared runs measured (a training size means nothing to inference)."""
        for widgets, workload in (((self.train_label, self.epochs, self.dataset), "train"),
                                  ((self.infer_label, self.requests), "infer")):
            offered = workload in workloads or (workload == "infer" and "generate" in workloads)
            for widget in widgets:
                widget.setEnabled(offered)
                tip = widget.property("own_tip")
                if tip is None:
                    widget.setProperty("own_tip", tip := widget.toolTip())
                widget.setToolTip(tip if offered else f"no {WORKLOADS[workload]} run in this comparison")

    def job(self) -> JobSize | None:
        """The job typed, or None (nothing typed, or a size that is not a count: the box says why)."""
        try:
            samples = parse_count(self.dataset.text(), "dataset size") if self.dataset.isEnabled() else None
            requests = parse_count(self.requests.text(), "number of requests") if self.requests.isEnabled() else None
        except JobSizeError as exc:
            self._say(str(exc)[0].upper() + str(exc)[1:] + ".", error=True)
            return None
        self._say("")
        if samples is None and requests is None:
            return None
        if samples is None:
            return JobSize(requests=requests)
        return JobSize.of_epochs(self.epochs.value(), int(round(samples)), requests)

    def _edited(self) -> None:
        job = self.job()
        if job != self._last and not self.has_problem:
            self._last = job
            self.changed.emit()

    def _say(self, text: str, error: bool = False) -> None:
        self.problem.setText(text)
        self.has_problem = error
        self.problem.setPalette(self.palette())
        if error:
            theme.tint_error(self.problem)

    # -- figures -------------------------------------------------------------------------------------
    def show_doc(self, doc: dict[str, Any] | None) -> None:
        """Fill the table from the comparison's ``job`` block (hidden when no job was sized)."""
        self.set_workloads({r["workload"] for r in (doc or {}).get("rows") or []})
        block = (doc or {}).get("job")
        groups = [g for g in (doc or {}).get("groups") or [] if g.get("job")] if block else []
        groups.sort(key=lambda g: g["workload"] != "train")  # training first, as the inputs read
        self.table.setVisible(bool(groups))
        self.table.setRowCount(len(groups))
        reasons: dict[str, list[str]] = {}
        for index, g in enumerate(groups):
            job = g["job"]
            cells = (g["label"], WORKLOADS.get(g["workload"], g["workload"]), str(g["batch_size"]),
                     figure(job["hours_cold"], 3), figure(job["hours_warm"], 3), _usd(job["usd_on_demand_cold"]),
                     _usd(job["usd_on_demand_warm"]), _usd(job["usd_spot_cold"]), _usd(job["usd_spot_warm"]))
            for col, text in enumerate(cells):
                item = QTableWidgetItem(clean(text))  # the label names a run's host and model
                if col >= 3:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                    start = "warm" if "warm" in COLUMNS[col] else "cold"
                    item.setToolTip(f"compile {start}: {job[f'compile_{start}_basis']}")
                self.table.setItem(index, col, item)
            where = g["label"] + (f" batch {g['batch_size']}" if g["workload"] == "infer" else "")
            for start in ("cold", "warm"):
                if job[f"compile_{start}_s"] is None:
                    reasons.setdefault(f"{start} N/A: {job[f'compile_{start}_basis']}", []).append(where)
        self.table.resizeColumnsToContents()
        rows_height = sum(self.table.rowHeight(r) for r in range(len(groups)))
        self.table.setFixedHeight(self.table.horizontalHeader().height() + rows_height + 2 * self.table.frameWidth()
                                  + 4)
        if block and not self.has_problem:
            sizes = "; ".join(block["describe"].values())
            notes = " ".join(f"{why[0].upper()}{why[1:]} ({', '.join(dict.fromkeys(where))})."
                             for why, where in reasons.items())
            self._say(f"{sizes}, compile counted once. {notes}".strip())
