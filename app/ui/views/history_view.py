"""The history view: every stored run, filtered and sorted; compare, re-run, re-attach, price, delete, export.

The store is read on a worker thread (through the bridge) with its own
connection, opened and closed by each call: a busy database (another process
writing) never holds up the UI thread, and no connection outlives its thread.
It is read when the view is made (the app starts) and whenever it is shown; while
it is shown, a ``StoreWatch`` looks every 2 s, also on a worker thread, whether the
runs listed changed (a run the CLI records meanwhile) and reads them again if so.
The signals ask the main window to act (start a run, re-attach, open the
comparison); this view does not run anything itself.
"""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, QSortFilterProxyModel, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMenu,
    QMessageBox,
    QPushButton,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from app.core.errors import NeuronBenchError
from app.core.numbers import usd
from app.core.runrecord import StoredRun
from app.paths import AppPaths
from app.services.pricing import load_pricebook
from app.services.run_pricing import declare_in_store, probed_type
from app.services.store import RunStore
from app.services.store_watch import Signature, StoreWatch, read_signature
from app.ui.bridge import Bridge
from app.ui.dialogs.instance_type_dialog import InstanceTypeDialog
from app.ui.models.runs_table import COLUMNS, RUN_ROLE, SORT_ROLE, RunsTableModel
from app.ui.views.export import ExportButtons, ReportExporter
from app.ui.widgets.status_line import StatusLine

DECLARE_TIP = ("name the instance type the selected runs ran on, when their host did not report one: they are "
               "priced from the price book (as `neuronbench runs set RUN --instance-type T`)")
HISTORY_LIMIT = 2000  # newest first; older runs stay in the store (and in `neuronbench runs list`)
REATTACHABLE = ("running", "unfinished")
WATCH_PERIOD_MS = 2_000  # how often a shown history looks for runs recorded elsewhere (a cheap look, see StoreWatch)


def undeclarable(runs: list[StoredRun]) -> str | None:
    """Why these runs cannot be given an instance type now, or None when they can."""
    for run in runs:
        if probed_type(run):
            return f"{run.run_id}'s host reported its type itself: {probed_type(run)}"
        if run.status == "running":
            return f"{run.run_id} is still running"
    return None


def read_history(db_path, limit: int) -> tuple[Signature | None, list[StoredRun]]:
    """Worker thread: the store's signature, then the newest runs (a change in between is seen at the next look)."""
    with RunStore(db_path) as store:  # made and migrated first, so that the signature has a table to read
        signature = read_signature(db_path)
        return signature, store.list_runs(limit=limit)


def delete_runs(db_path, run_ids: list[str]) -> int:
    """Worker thread: delete the runs (events and telemetry too); returns how many."""
    with RunStore(db_path) as store:
        for run_id in run_ids:
            store.delete_run(run_id)
    return len(run_ids)


class WorkloadFilter(QSortFilterProxyModel):
    """The text filter (any column) and, when one is picked, only the runs of one workload."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.workload = ""

    def set_workload(self, workload: str) -> None:
        self.workload = workload
        self.invalidateFilter()

    def filterAcceptsRow(self, row: int, parent) -> bool:
        if self.workload:
            runs = getattr(self.sourceModel(), "runs", [])
            if row < len(runs) and (runs[row].workload or "") != self.workload:
                return False
        return super().filterAcceptsRow(row, parent)


class HistoryView(QWidget):
    rerun_requested = Signal(object, str)      # the run's spec (dict), its host
    reattach_requested = Signal(str, str)      # run id, host
    compare_requested = Signal(list)           # run ids, in the order shown
    runs_priced = Signal(list)                 # run ids whose instance type was declared (their cost changed)
    error_raised = Signal(str, str, str)       # title, sentence, detail: for the app's error panel

    def __init__(self, paths: AppPaths, bridge: Bridge, parent: QWidget | None = None,
                 limit: int = HISTORY_LIMIT) -> None:
        super().__init__(parent)
        self.paths, self.bridge, self.limit = paths, bridge, limit
        self.loading = False
        self.delete_question: QMessageBox | None = None
        self.declare_dialog: InstanceTypeDialog | None = None
        self._generation = 0
        self.watch = StoreWatch(paths.runs_db)
        self.watch_timer = QTimer(self)
        self.watch_timer.setInterval(WATCH_PERIOD_MS)
        self.watch_timer.timeout.connect(self._look)
        self._looking = False  # a look at the store is on a worker thread

        self.model = RunsTableModel(self)
        self.proxy = WorkloadFilter(self)
        self.proxy.setSourceModel(self.model)
        self.proxy.setSortRole(SORT_ROLE)
        self.proxy.setFilterKeyColumn(-1)  # any column: host, model, status, id, instance type...
        self.proxy.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)

        self.workload_filter = QComboBox()
        for label, workload in (("All workloads", ""), ("Training", "train"), ("Inference", "infer"),
                                ("Generate", "generate"), ("Serve", "serve")):
            self.workload_filter.addItem(label, workload)
        self.workload_filter.setToolTip("show only the runs of one workload")
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter: host, model, status, instance type, run id…")
        self.filter.setClearButtonEnabled(True)
        self.filter.setToolTip("show only the runs whose cells contain this text (any column, any case)")
        self.count = QLabel()
        self.count.setToolTip(f"runs shown by the filter, of the store's newest {limit}")
        self.refresh_button = self._button("Refresh", "read the run store again (F5)")
        self.compare_button = self._button("Compare", "compare the selected runs: speed, cost, price-performance")
        self.rerun_button = self._button("Re-run", "run the selected run's spec again on its host (a model file: "
                                                   "the copy stored with the run, whatever the file on disk holds now)")
        self.reattach_button = self._button("Re-attach", "follow an unfinished run again from the last event "
                                                         "stored (only for runs that did not end)")
        self.declare_button = self._button("Declare instance type…", DECLARE_TIP)
        self.delete_button = self._button("Delete…", "remove the selected runs, their events and telemetry from "
                                                     "the store (asks first; the hosts keep their run folders)")
        self.export = ExportButtons("the selected runs")

        self.table = QTableView()
        self.table.setModel(self.proxy)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COLUMNS.index("Started"), Qt.SortOrder.DescendingOrder)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(False)  # a stretched "$ per 1M" read as a gap
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.setToolTip("")
        self.status = StatusLine()

        top = QHBoxLayout()
        top.addWidget(self.workload_filter)
        top.addWidget(self.filter, 1)
        top.addWidget(self.count)
        top.addWidget(self.refresh_button)
        actions = QHBoxLayout()
        for button in self._action_buttons():
            actions.addWidget(button)
        actions.addStretch(1)
        actions.addWidget(self.export)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.table, 1)
        layout.addLayout(actions)
        layout.addWidget(self.status)

        self.exporter = ReportExporter(paths, bridge, self)
        self.exporter.finished.connect(self.status.show_message)
        self.exporter.finished.connect(self._update_buttons)
        self.exporter.failed.connect(lambda exc: self._show_error("Export failed", exc))
        self.filter.textChanged.connect(self._filter_changed)
        self.workload_filter.currentIndexChanged.connect(self._workload_changed)
        self.refresh_button.clicked.connect(self.refresh)
        self.compare_button.clicked.connect(self.compare_selected)
        self.rerun_button.clicked.connect(self.rerun_selected)
        self.reattach_button.clicked.connect(self.reattach_selected)
        self.declare_button.clicked.connect(self.declare_selected)
        self.delete_button.clicked.connect(self.ask_delete)
        self.export.requested.connect(self.ask_export)
        self.table.selectionModel().selectionChanged.connect(self._update_buttons)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.table.doubleClicked.connect(lambda _: self.compare_selected())
        refresh = QAction(self)
        refresh.setShortcut(QKeySequence.StandardKey.Refresh)
        refresh.triggered.connect(self.refresh)
        self.addAction(refresh)
        delete = QAction(self)
        delete.setShortcut(QKeySequence.StandardKey.Delete)
        delete.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        delete.triggered.connect(self.ask_delete)
        self.table.addAction(delete)
        self._update_buttons()
        self._update_count()
        self.refresh()  # the runs stored before the app started (or by the CLI), before anyone asks

    def _action_buttons(self) -> tuple[QPushButton, ...]:
        return (self.compare_button, self.rerun_button, self.reattach_button, self.declare_button,
                self.delete_button)

    def _button(self, text: str, tip: str) -> QPushButton:
        button = QPushButton(text)
        button.setAutoDefault(False)
        button.setToolTip(tip)
        return button

    # -- reading the store ------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read the store again (on a worker thread); the table keeps its selection by run id."""
        self._generation += 1
        generation = self._generation
        self.loading = True
        self.bridge.call("history-read", read_history, self.paths.runs_db, self.limit,
                         on_done=lambda read: self._loaded(generation, *read),
                         on_failed=lambda exc: self._read_failed(generation, exc))

    def _loaded(self, generation: int, signature: Signature | None, runs: list[StoredRun]) -> None:
        if generation != self._generation:
            return  # a newer read is on its way
        self.watch.baseline = signature
        selected = self.selected_ids()
        self.model.set_runs(runs)
        self.loading = False
        self.table.resizeColumnsToContents()
        self.select_runs(selected)
        self._update_count()
        self._update_buttons()

    def _read_failed(self, generation: int, exc: BaseException) -> None:
        if generation == self._generation:
            self.loading = False
            self._show_error("The run history cannot be read", exc)

    # -- following the store while shown ----------------------------------------------------------
    def showEvent(self, event) -> None:
        super().showEvent(event)
        if not self.loading:
            self.refresh()  # what was recorded while the tab was hidden
        self.watch_timer.start()

    def hideEvent(self, event) -> None:
        super().hideEvent(event)
        self.watch_timer.stop()
        if not self._looking:
            self.watch.close()  # else closed when that look returns

    def _look(self) -> None:
        """Ask a worker thread whether the runs listed changed (one look at a time, none during a read)."""
        if self._looking or self.loading:
            return
        self._looking = True
        self.bridge.call("history-watch", self.watch.changed, on_done=self._looked, on_failed=self._look_failed)

    def _looked(self, changed: bool) -> None:
        self._looking = False
        if not self.watch_timer.isActive():
            self.watch.close()  # hidden meanwhile
        elif changed and not self.loading:
            self.refresh()

    def _look_failed(self, _exc: BaseException) -> None:
        self._looking = False  # StoreWatch turns store errors into "no change"; a Refresh still says what is wrong

    # -- selection --------------------------------------------------------------------------------
    def selected_runs(self) -> list[StoredRun]:
        """The selected runs in the order the table shows them."""
        rows = sorted(index.row() for index in self.table.selectionModel().selectedRows())
        return [self.proxy.index(row, 0).data(RUN_ROLE) for row in rows]

    def selected_ids(self) -> list[str]:
        return [run.run_id for run in self.selected_runs()]

    def select_runs(self, run_ids: list[str]) -> None:
        """Select exactly these runs (where shown)."""
        self.table.clearSelection()
        selection = self.table.selectionModel()
        for row in range(self.proxy.rowCount()):
            if self.proxy.index(row, 0).data() in run_ids:
                selection.select(self.proxy.index(row, 0),
                                 selection.SelectionFlag.Select | selection.SelectionFlag.Rows)

    def _update_buttons(self, *_: Any) -> None:
        runs = self.selected_runs()
        single = len(runs) == 1
        self.compare_button.setEnabled(bool(runs))
        self.rerun_button.setEnabled(single and bool(runs[0].spec))
        self.reattach_button.setEnabled(single and runs[0].status in REATTACHABLE)
        why_not = undeclarable(runs)
        self.declare_button.setEnabled(bool(runs) and why_not is None)
        self.declare_button.setToolTip(DECLARE_TIP if why_not is None else f"{DECLARE_TIP} ({why_not})")
        self.delete_button.setEnabled(bool(runs))
        self.export.set_enabled(bool(runs) and not self.exporter.busy)

    def _filter_changed(self, text: str) -> None:
        self.proxy.setFilterFixedString(text.strip())
        self._update_count()
        self._update_buttons()

    def _workload_changed(self) -> None:
        self.proxy.set_workload(str(self.workload_filter.currentData() or ""))
        self._update_count()
        self._update_buttons()

    def _update_count(self) -> None:
        shown, total = self.proxy.rowCount(), self.model.rowCount()
        noun = "run" if total == 1 else "runs"
        self.count.setText(f"{shown} of {total} {noun}" if shown != total else f"{total} {noun}")

    def _context_menu(self, point: QPoint) -> None:
        menu = QMenu(self)
        for button in self._action_buttons():
            action = menu.addAction(button.text(), button.click)
            action.setEnabled(button.isEnabled())
            action.setToolTip(button.toolTip())
        export = menu.addMenu("Export")
        for fmt, button in self.export.buttons.items():
            action = export.addAction(fmt.upper(), button.click)
            action.setEnabled(button.isEnabled())
        menu.popup(self.table.viewport().mapToGlobal(point))

    # -- actions ----------------------------------------------------------------------------------
    def compare_selected(self) -> None:
        ids = self.selected_ids()
        if ids:
            self.compare_requested.emit(ids)

    def rerun_selected(self) -> None:
        runs = self.selected_runs()
        if len(runs) == 1 and runs[0].spec:
            self.rerun_requested.emit(dict(runs[0].spec), runs[0].host)

    def reattach_selected(self) -> None:
        runs = self.selected_runs()
        if len(runs) == 1 and runs[0].status in REATTACHABLE:
            self.reattach_requested.emit(runs[0].run_id, runs[0].host)

    def declare_selected(self) -> InstanceTypeDialog | None:
        """Ask (without blocking the event loop) which instance type the selected runs ran on."""
        runs = self.selected_runs()
        if not runs or undeclarable(runs) is not None or self.declare_dialog is not None:
            return None
        try:
            book = load_pricebook(self.paths)
        except NeuronBenchError as exc:
            self._show_error("The price book cannot be read", exc)
            return None
        dialog = InstanceTypeDialog(runs, book, self)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.declared.connect(lambda itype, region: self._declare([r.run_id for r in runs], book, itype, region))
        dialog.finished.connect(self._declare_dialog_closed)
        self.declare_dialog = dialog
        dialog.open()
        return dialog

    def _declare_dialog_closed(self, _code: int) -> None:
        dialog, self.declare_dialog = self.declare_dialog, None
        if dialog is not None:
            dialog.deleteLater()

    def _declare(self, run_ids: list[str], book, instance_type: str, region: str) -> None:
        self.status.show_message(f"Pricing {len(run_ids)} run(s) as {instance_type}…")
        self.bridge.call("history-declare", declare_in_store, self.paths.runs_db, book, run_ids, instance_type,
                         region or None, on_done=self._declared, on_failed=self._declare_failed)

    def _declared(self, runs: list[StoredRun]) -> None:
        cost = (runs[0].result or {}).get("cost") or {} if runs else {}
        price = f"{usd(cost['usd_per_hour'])}/h" if cost.get("usd_per_hour") is not None else "no price"
        declared = (runs[0].declared or {}) if runs else {}
        self.status.show_message(f"Declared {declared.get('instance_type')} for {len(runs)} run(s) ({price}): "
                                 "History, Compare and reports now price them with it.")
        self.runs_priced.emit([run.run_id for run in runs])
        self.refresh()

    def _declare_failed(self, exc: BaseException) -> None:
        self._show_error("The instance type was not declared", exc)

    def ask_delete(self) -> None:
        """Ask (without blocking the event loop) before deleting the selected runs."""
        runs = self.selected_runs()
        if not runs or self.delete_question is not None:
            return
        names = ", ".join(run.run_id for run in runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
        box = QMessageBox(QMessageBox.Icon.Question, "Delete runs",
                          f"Delete {len(runs)} run(s) from the history: {names}?", parent=self)
        box.setInformativeText("Their stored events and telemetry go too. The hosts keep their own run folders.")
        box.setStandardButtons(QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.finished.connect(lambda answer: self._answered_delete(answer, [run.run_id for run in runs]))
        self.delete_question = box
        box.open()

    def _answered_delete(self, answer: int, run_ids: list[str]) -> None:
        box, self.delete_question = self.delete_question, None
        if box is not None:
            box.deleteLater()
        if answer != QMessageBox.StandardButton.Yes:
            return
        self.bridge.call("history-delete", delete_runs, self.paths.runs_db, run_ids,
                         on_done=self._deleted, on_failed=self._delete_failed)

    def _deleted(self, count: int) -> None:
        self.status.show_message(f"Deleted {count} run(s).")
        self.refresh()

    def _delete_failed(self, exc: BaseException) -> None:
        self._show_error("Delete failed", exc)
        self.refresh()  # some may have gone before the one that failed

    def ask_export(self, fmt: str) -> None:
        ids = self.selected_ids()
        if not ids:
            return
        path = self.exporter.ask_path(self, fmt, f"neuronbench-{ids[0]}" if len(ids) == 1 else "neuronbench-report")
        if path:
            self.export_to(fmt, path)

    def export_to(self, fmt: str, path: str) -> None:
        """Write the selected runs' report (baseline: the first shown) to ``path`` on a worker thread."""
        ids = self.selected_ids()
        self.status.show_message(f"Writing the {fmt.upper()} report of {len(ids)} run(s)…")
        self.exporter.export(ids, fmt, path)
        self._update_buttons()

    def _show_error(self, title: str, exc: BaseException) -> None:
        self.error_raised.emit(title, *self.status.show_exception(exc))
        self._update_buttons()
