"""The main window: hosts on the left, the workload under them, live runs on the right, errors on top.

Everything slow (probing a host, listing timm models, a run) happens on worker
threads through the bridge; this class only reacts to queued signals.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QByteArray, Qt, Slot
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

import app
from app.core.errors import NeuronBenchError
from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services.model_catalog import ModelCatalog, load_model_catalog
from app.services.session import probe_host
from app.services.transport import local_python
from app.ui.bridge import Bridge
from app.ui.host_provider import HostProvider, LocalHostProvider
from app.ui.settings import AppSettings
from app.ui.widgets.error_panel import ErrorPanel, describe_exception
from app.ui.widgets.hosts_sidebar import HostsSidebar
from app.ui.widgets.live_run_view import LiveRunView
from app.ui.widgets.runs_area import RunsArea
from app.ui.widgets.workload_panel import WorkloadPanel


@dataclass(frozen=True)
class ProbeOutcome:
    """A probe's answer for one host, or why there is none (a worker thread's result, so it names the host)."""

    name: str
    env: dict[str, Any] | None
    error: BaseException | None


def probe_for_sidebar(provider: HostProvider, host: HostProfile) -> ProbeOutcome:
    try:
        return ProbeOutcome(host.name, probe_host(provider.transport_for(host), quick=True), None)
    except Exception as exc:
        return ProbeOutcome(host.name, None, exc)


def model_catalog(cache_dir) -> ModelCatalog:
    return load_model_catalog(local_python(), cache_dir)


class MainWindow(QMainWindow):
    def __init__(self, paths: AppPaths, settings: AppSettings, provider: HostProvider | None = None, *,
                 probe_hosts: bool = True, load_models: bool = True) -> None:
        super().__init__()
        self.paths = paths
        self.settings = settings
        self.provider: HostProvider = provider or LocalHostProvider(paths)
        self.bridge = Bridge(self)
        self._close_confirmed = False
        self.close_question: QMessageBox | None = None
        self.setWindowTitle("NeuronBench")
        self.setObjectName("main-window")

        # ---- left: hosts and workload
        self.sidebar = HostsSidebar()
        self.sidebar.setMinimumHeight(70)
        self.sidebar.setMaximumHeight(200)
        self.workload = WorkloadPanel()
        self.run_button = QPushButton("Run on the selected hosts")
        self.run_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel")
        self.probe_button = QPushButton("Probe again")
        self.probe_button.setToolTip("ask each host again what it has (F5)")
        hosts_head = QHBoxLayout()
        hosts_head.addWidget(_heading("Hosts"), 1)
        hosts_head.addWidget(self.probe_button)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button, 1)
        buttons.addWidget(self.cancel_button)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addLayout(hosts_head)
        left_layout.addWidget(self.sidebar)
        left_layout.addSpacing(6)
        left_layout.addWidget(_heading("Workload"))
        left_layout.addWidget(self.workload)
        left_layout.addStretch(1)
        left_layout.addLayout(buttons)
        left_scroll = QScrollArea()
        left_scroll.setWidgetResizable(True)
        left_scroll.setWidget(left)
        left_scroll.setMinimumWidth(330)
        left_scroll.setFrameShape(QScrollArea.Shape.NoFrame)

        # ---- right: errors, then the runs
        self.errors = ErrorPanel()
        self.runs = RunsArea()
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.addWidget(self.errors)
        right_layout.addWidget(self.runs, 1)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(left_scroll)
        self.splitter.addWidget(right)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setChildrenCollapsible(False)
        self.setCentralWidget(self.splitter)
        self.status_label = QLabel()
        self.statusBar().addWidget(self.status_label, 1)

        self._make_actions()
        self.sidebar.checked_changed.connect(self._update_actions)
        self.workload.validity_changed.connect(self._update_actions)
        self.workload.edited.connect(self._update_actions)
        self.run_button.clicked.connect(self.start_runs)
        self.cancel_button.clicked.connect(self.cancel_runs)
        self.probe_button.clicked.connect(self.probe_hosts)
        self.runs.error_raised.connect(self.errors.show_error)
        self.runs.run_finished.connect(self._on_run_finished)

        self.sidebar.set_hosts(self.provider.hosts(), settings.checked_hosts())
        self._restore()
        self._update_actions()
        self.status_label.setText(self._left_running_note() or "Ready")
        if probe_hosts:
            self.probe_hosts()
        if load_models:
            self.bridge.call("model-catalog", model_catalog, paths.cache, on_done=self._on_models,
                             on_failed=self._on_models_failed)

    # ------------------------------------------------------------ actions and shortcuts
    def _make_actions(self) -> None:
        self.run_action = QAction("&Run on the selected hosts", self)
        self.run_action.setShortcut(QKeySequence("Ctrl+R"))
        self.run_action.triggered.connect(self.start_runs)
        self.cancel_action = QAction("&Cancel the runs", self)
        self.cancel_action.setShortcuts([QKeySequence("Esc"), QKeySequence("Ctrl+.")])
        self.cancel_action.triggered.connect(self.cancel_runs)
        self.probe_action = QAction("&Probe the hosts again", self)
        self.probe_action.setShortcut(QKeySequence("F5"))
        self.probe_action.triggered.connect(self.probe_hosts)
        find = QAction("Find a &model", self)
        find.setShortcut(QKeySequence("Ctrl+F"))
        find.triggered.connect(self._focus_model)
        quit_ = QAction("&Quit", self)
        quit_.setShortcut(QKeySequence("Ctrl+Q"))
        quit_.setMenuRole(QAction.MenuRole.QuitRole)
        quit_.triggered.connect(self.close)
        about = QAction("&About NeuronBench", self)
        about.triggered.connect(self._about)
        file_menu = self.menuBar().addMenu("&File")
        file_menu.addAction(quit_)
        run_menu = self.menuBar().addMenu("&Run")
        for action in (self.run_action, self.cancel_action, self.probe_action, find):
            run_menu.addAction(action)
        self.menuBar().addMenu("&Help").addAction(about)
        self.run_button.setToolTip("Run the workload on every ticked host (Ctrl+R)")
        self.cancel_button.setToolTip("Stop the runs on their hosts (Esc)")

    def _focus_model(self) -> None:
        self.workload.model.setFocus()
        self.workload.model.selectAll()

    def _about(self) -> None:
        QMessageBox.about(self, "About NeuronBench",
                          f"NeuronBench {app.__version__}\n\nBenchmark the same training or traced-inference "
                          "workload on Trainium, Inferentia, GPU and CPU hosts, and compare speed and cost.")

    def _update_actions(self) -> None:
        hosts = self.sidebar.checked()
        busy = bool(self.runs.active_views())
        can_run = self.workload.valid and bool(hosts) and not busy
        self.run_action.setEnabled(can_run)
        self.run_button.setEnabled(can_run)
        self.cancel_action.setEnabled(busy)
        self.cancel_button.setEnabled(busy)
        if not hosts:
            self.run_button.setText("Tick a host to run on")
        elif len(hosts) == 1:
            self.run_button.setText("Run on " + ("this computer" if hosts[0].local else hosts[0].name))
        else:
            self.run_button.setText(f"Run on the {len(hosts)} selected hosts")

    # ------------------------------------------------------------ runs
    @Slot()
    def start_runs(self) -> list[LiveRunView]:
        spec = self.workload.spec()
        hosts = self.sidebar.checked()
        if spec is None or not hosts or self.runs.active_views():
            return []
        self.runs.clear()
        self.errors.clear()
        views = []
        for host in hosts:
            title = "This computer" if host.local else host.name
            try:
                transport = self.provider.transport_for(host)
            except (NeuronBenchError, ValueError) as exc:
                self.errors.show_exception(f"{title}: cannot start a run", exc)
                continue
            job = self.bridge.start_run(transport, spec)
            views.append(self.runs.add_run(job, title))
            # Remembered until it ends here: if the app dies meanwhile, the run can be attached to again.
            self.settings.add_unfinished_run(host.name, job.run_id, spec.to_dict())
            job.start()
        self.settings.set_workload(self.workload.form_values())
        self.settings.sync()
        self._update_actions()
        self.status_label.setText(f"{len(views)} run(s) going" if views else "Nothing started")
        return views

    @Slot()
    def cancel_runs(self) -> None:
        for view in self.runs.active_views():
            view.cancel()
        self.status_label.setText("Cancelling…")

    def _on_run_finished(self, view: LiveRunView) -> None:
        if view.state.status != "detached":
            self.settings.forget_unfinished_run(view.job.run_id)
        left = self.runs.active_views()
        statuses = sorted({v.state.status for v in self.runs.views})
        self.status_label.setText(f"{len(left)} run(s) going" if left else "Finished: " + ", ".join(statuses))
        self._update_actions()

    def _left_running_note(self) -> str:
        """Runs a previous session left going on their hosts (re-attaching them comes with the run history)."""
        left = self.settings.unfinished_runs()
        if not left:
            return ""
        names = ", ".join(f"{r['run_id']} on {r['host']}" for r in left[-3:])
        return f"{len(left)} run(s) were left running on their hosts last time ({names})"

    # ------------------------------------------------------------ hosts
    @Slot()
    def probe_hosts(self) -> None:
        for name, row in self.sidebar.rows.items():
            if row.status == "probing":
                continue
            self.sidebar.update_row(name, status="probing", problem="")
            self.bridge.call(f"probe-{name}", probe_for_sidebar, self.provider, row.profile,
                             on_done=self._on_probed)

    @Slot(object)
    def _on_probed(self, outcome: ProbeOutcome) -> None:
        row = self.sidebar.rows.get(outcome.name)
        if row is None:
            return
        title = row.title
        if outcome.error is not None:
            message, _detail = describe_exception(outcome.error)
            self.sidebar.update_row(outcome.name, status="failed", problem=message)
            self.errors.show_exception(f"{title}: probe failed", outcome.error)
            return
        env = outcome.env or {}
        price = self.provider.price_per_hour(row.profile, row.profile.instance_type or env.get("instance_type"))
        self.sidebar.update_row(outcome.name, status="ok", env=env, price_per_hour=price,
                                problem="; ".join(env.get("warnings") or []))

    # ------------------------------------------------------------ model names
    @Slot(object)
    def _on_models(self, catalog: ModelCatalog) -> None:
        self.workload.model.set_names(catalog.names, f"timm {catalog.timm_version}")

    @Slot(object)
    def _on_models_failed(self, exc: BaseException) -> None:
        message, _detail = describe_exception(exc)
        self.workload.model.setToolTip(self.workload.model.toolTip() + f"\n\nModel list unavailable: {message}")

    # ------------------------------------------------------------ settings and closing
    def _restore(self) -> None:
        form = self.settings.workload()
        if form:
            self.workload.set_form_values(form)
        geometry = self.settings.geometry("window")
        if geometry is None or not self.restoreGeometry(geometry):
            self.resize(1360, 860)
        state = self.settings.geometry("window-state")
        if state is not None:
            self.restoreState(state)
        split = self.settings.geometry("splitter")
        if split is None or not self.splitter.restoreState(split):
            self.splitter.setSizes([360, 1000])

    def _save(self) -> None:
        self.settings.set_geometry("window", QByteArray(self.saveGeometry()))
        self.settings.set_geometry("window-state", QByteArray(self.saveState()))
        self.settings.set_geometry("splitter", QByteArray(self.splitter.saveState()))
        self.settings.set_workload(self.workload.form_values())
        self.settings.set_checked_hosts([h.name for h in self.sidebar.checked()])
        self.settings.sync()

    def closeEvent(self, event: QCloseEvent) -> None:
        active = self.runs.active_views()
        if active and not self._close_confirmed:
            event.ignore()
            self._ask_before_closing(active)
            return
        self._save()
        self.runs.stop()
        for view in active:  # recorded in the settings when they started; the note says where they went
            view.state.mark("detached", "still running on the host")
            view.state.note("info", f"left running on {view.job.host} as run {view.job.run_id}")
        self.bridge.shutdown()
        super().closeEvent(event)

    def leave_runs_and_close(self) -> None:
        """Close without asking: every run still going is left running on its host (its id is kept)."""
        self._close_confirmed = True
        self.close()

    def _ask_before_closing(self, active: list[LiveRunView]) -> None:
        if self.close_question is not None and self.close_question.isVisible():
            return
        names = ", ".join(view.title for view in active)
        box = QMessageBox(QMessageBox.Icon.Question, "Runs are still going",
                          f"{len(active)} run(s) are still going ({names}).", parent=self)
        box.setInformativeText("They keep running on their hosts if you close NeuronBench; their run ids are "
                               "kept so that they can be attached to again.")
        box.addButton("Close, leave them running", QMessageBox.ButtonRole.AcceptRole)
        keep = box.addButton("Keep the window open", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(keep)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.finished.connect(self._on_close_answer)
        self.close_question = box
        box.open()  # not exec(): no nested event loop, and the runs keep drawing meanwhile

    @Slot(int)
    def _on_close_answer(self, _code: int) -> None:
        box = self.close_question
        if box is None:
            return
        clicked = box.clickedButton()
        self.close_question = None
        box.deleteLater()
        if clicked is not None and box.buttonRole(clicked) == QMessageBox.ButtonRole.AcceptRole:
            self.leave_runs_and_close()


def _heading(text: str) -> QLabel:
    label = QLabel(f"<b>{text}</b>")
    label.setTextFormat(Qt.TextFormat.RichText)
    return label
