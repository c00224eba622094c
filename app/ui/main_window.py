"""The main window: hosts on the left, the workload under them, live runs on the right, errors on top.

Everything slow (probing a host, listing timm models, a run) happens on worker
threads through the bridge; this class only reacts to queued signals.
"""
from __future__ import annotations

from PySide6.QtCore import QByteArray, Qt, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

import app
from app.core.ec2_cost import LaunchPlan, plan_launch
from app.core.errors import NeuronBenchError
from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services.ec2.lease import Ec2RunOptions, Ec2Transport
from app.services.model_catalog import ModelCatalog, load_model_catalog
from app.services.pricing import load_pricebook
from app.services.recorder import RunRecorder, open_recording
from app.services.transport import local_python
from app.ui.bridge import Bridge, RunJob
from app.ui.closing import ClosingMixin
from app.ui.cluster_runs import ClusterRunsMixin
from app.ui.dialogs.launch_confirm import launch_accepted, launch_question
from app.ui.dialogs.price_dialog import PriceOverrideDialog
from app.ui.dialogs.ssh_questions import DialogPrompts
from app.ui.host_provider import HostProvider, StoreHostProvider
from app.ui.hosts_panel import HostsPanel
from app.ui.reattach_runs import ReattachMixin
from app.ui.settings import AppSettings
from app.ui.views.compare_view import CompareView
from app.ui.views.history_view import HistoryView
from app.ui.widgets.error_panel import ErrorPanel, describe_exception
from app.ui.widgets.live_run_view import LiveRunView
from app.ui.widgets.reattach_banner import ReattachBanner
from app.ui.widgets.runs_area import RunsArea
from app.ui.widgets.workload_panel import WorkloadPanel
from remote_agent.protocol import RunSpec, new_run_id


def model_catalog(cache_dir) -> ModelCatalog:
    return load_model_catalog(local_python(), cache_dir)


class MainWindow(ClosingMixin, ReattachMixin, ClusterRunsMixin, QMainWindow):
    run_recorded = Signal()        # a run ended and its Result is in the store (the history refreshes)
    store_problem = Signal(str)    # a recorder could not write (from a run's thread)

    def __init__(self, paths: AppPaths, settings: AppSettings, provider: HostProvider | None = None, *,
                 probe_hosts: bool = True, load_models: bool = True, list_instances: bool = True) -> None:
        super().__init__()
        self.paths = paths
        self.settings = settings
        self.bridge = Bridge(self)
        self.prompts = DialogPrompts(self)  # the SSH layer's questions, as dialogs
        self.provider: HostProvider = provider or StoreHostProvider(paths, self.prompts)
        self._close_confirmed = False
        self.close_question: QMessageBox | None = None
        self.launch_question: QMessageBox | None = None  # "N instances, about $X at most": launch?

        self.setWindowTitle("NeuronBench")
        self.setObjectName("main-window")

        # ---- errors first: everything below may report one.  Every run started here is recorded as it
        # streams (the history, compare and reports read the store).
        self.errors = ErrorPanel()
        self.store, self.book = open_recording(paths, self._warn)
        self.store_problem.connect(self._warn)

        # ---- left: hosts and workload
        self.hosts = HostsPanel(self.provider, self.bridge, self.errors, lambda: self.book)
        self.sidebar = self.hosts.sidebar
        self.workload = WorkloadPanel()
        self.distributed = QCheckBox("One distributed run across the ticked hosts")
        self.distributed.setToolTip("train once across every ticked host (torchrun on each node, the first one's "
                                    "rank 0) instead of one run per host (CLI: run --nodes H1,H2,...)")
        self.slurm_nodes = QSpinBox()
        self.slurm_nodes.setObjectName("slurm-nodes")
        self.slurm_nodes.setRange(2, 4096)
        self.slurm_nodes.setPrefix("Nodes to allocate: ")
        self.slurm_nodes.setToolTip("one training across this many nodes of the Slurm cluster: sbatch allocates them, "
                                    "srun starts the agent on each (CLI: run --host NAME --nnodes N)")
        self.run_button = QPushButton("Run on the selected hosts")
        self.run_button.setDefault(True)
        self.cancel_button = QPushButton("Cancel")
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button, 1)
        buttons.addWidget(self.cancel_button)
        left = QWidget()
        left_layout = QVBoxLayout(left)
        left_layout.addWidget(self.hosts)
        left_layout.addSpacing(6)
        left_layout.addWidget(_heading("Workload"))
        left_layout.addWidget(self.workload)
        left_layout.addStretch(1)
        left_layout.addWidget(self.distributed)
        left_layout.addWidget(self.slurm_nodes)
        left_layout.addLayout(buttons)
        left_scroll = QScrollArea()
        left_scroll.setWidgetResizable(True)
        left_scroll.setWidget(left)
        left_scroll.setMinimumWidth(330)
        left_scroll.setFrameShape(QScrollArea.Shape.NoFrame)

        # ---- right: errors and runs left going, then the views in tabs
        self.reattach_banner = ReattachBanner()
        self.runs = RunsArea()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.history = HistoryView(paths, self.bridge)
        self.compare = CompareView(paths, self.bridge)
        self.tabs.addTab(self.runs, "Live runs")
        # In scroll areas: a window narrower than a view's table and charts scrolls instead of refusing to shrink.
        self.tabs.addTab(_scrolled(self.history), "History")
        self.tabs.addTab(_scrolled(self.compare), "Compare")
        self.price_dialog: PriceOverrideDialog | None = None
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.addWidget(self.errors)
        right_layout.addWidget(self.reattach_banner)
        right_layout.addWidget(self.tabs, 1)

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
        self.hosts.checked_changed.connect(self._update_host_fit)
        self.hosts.probed.connect(self._update_host_fit)
        self.hosts.checked_changed.connect(self._update_actions)
        self.hosts.status.connect(self.status_label.setText)
        self.workload.validity_changed.connect(self._update_actions)
        self.workload.edited.connect(self._update_actions)
        self.run_button.clicked.connect(self.start_runs)
        self.distributed.toggled.connect(self._update_actions)
        self.slurm_nodes.valueChanged.connect(self._update_actions)
        self.cancel_button.clicked.connect(self.cancel_runs)
        self.runs.error_raised.connect(self.errors.show_error)
        self.runs.run_finished.connect(self._on_run_finished)
        self.reattach_banner.reattach.connect(self.reattach_runs)
        self.history.error_raised.connect(self.errors.show_error)
        self.compare.error_raised.connect(self.errors.show_error)
        self.history.compare_requested.connect(self.show_comparison)
        self.history.reattach_requested.connect(lambda run_id, _host: self.reattach(run_id))
        self.history.rerun_requested.connect(self.rerun)
        self.history.runs_priced.connect(self._runs_priced)
        self.run_recorded.connect(self.history.refresh)

        self.hosts.show_hosts(settings.checked_hosts())
        self._restore()
        self._update_actions()
        self.status_label.setText("Ready")
        self.offer_reattach()
        if list_instances:
            self.hosts.list_owned_instances()  # EC2 instances left running, listed from a worker thread
        if probe_hosts:
            self.hosts.probe_hosts()
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
        self.probe_action.triggered.connect(self.hosts.probe_hosts)
        self.add_host_action = QAction("&Add a host…", self)
        self.add_host_action.setShortcut(QKeySequence("Ctrl+N"))
        self.add_host_action.triggered.connect(self.hosts.add_host)
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
        file_menu.addAction(self.add_host_action)
        file_menu.addSeparator()
        file_menu.addAction(quit_)
        run_menu = self.menuBar().addMenu("&Run")
        for action in (self.run_action, self.cancel_action, self.probe_action, find):
            run_menu.addAction(action)
        view_menu = self.menuBar().addMenu("&View")
        for index, (name, key) in enumerate((("&Live runs", "Ctrl+1"), ("&History", "Ctrl+2"),
                                             ("&Compare", "Ctrl+3"))):
            action = view_menu.addAction(name)
            action.setShortcut(QKeySequence(key))
            action.triggered.connect(lambda _=False, i=index: self.tabs.setCurrentIndex(i))
        self.price_action = QAction("Set your own &price…", self)
        self.price_action.setToolTip("override the price book for an instance type (e.g. a negotiated or "
                                     "reserved price)")
        self.price_action.triggered.connect(self.override_price)
        self.menuBar().addMenu("&Prices").addAction(self.price_action)
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

    def _update_host_fit(self) -> None:
        """Check the form against what the ticked hosts have (e.g. --nproc against their GPUs)."""
        self.workload.set_host_envs(self.hosts.checked_envs())
        self._update_actions()

    def _update_actions(self) -> None:
        hosts = self.sidebar.checked()
        busy = bool(self.runs.active_views())
        can_run = self.workload.valid and bool(hosts) and not busy
        self.run_action.setEnabled(can_run)
        self.run_button.setEnabled(can_run)
        self.cancel_action.setEnabled(busy)
        self.cancel_button.setEnabled(busy)
        self.hosts.set_busy(busy)
        self.add_host_action.setEnabled(self.hosts.editable)
        distributable = len(hosts) > 1 and self.workload.current_workload() == "train"
        self.distributed.setVisible(distributable)
        slurm = len(hosts) == 1 and hosts[0].slurm is not None
        self.slurm_nodes.setVisible(slurm)
        if not hosts:
            self.run_button.setText("Tick a host to run on")
        elif slurm:
            self.run_button.setText(f"Submit one training on {self.slurm_nodes.value()} nodes of {hosts[0].name}")
        elif distributable and self.distributed.isChecked():
            self.run_button.setText(f"Run one training across the {len(hosts)} hosts")
        elif len(hosts) == 1:
            self.run_button.setText("Run on " + ("this computer" if hosts[0].local else hosts[0].name))
        else:
            self.run_button.setText(f"Run on the {len(hosts)} selected hosts")

    # ------------------------------------------------------------ runs
    @Slot()
    def start_runs(self) -> list[LiveRunView]:
        """Run on the ticked hosts; when some are launched on EC2, ask first (``launch_question``)."""
        spec = self.workload.spec_to_run()  # a model file is read now, as it is (or a stored run's copy)
        hosts = self.sidebar.checked()
        if spec is None or not hosts or self.runs.active_views() or self.launch_question is not None:
            return []
        plans = self._launch_plans(hosts, spec)
        if plans:
            self.launch_question = launch_question(self, list(plans.values()))
            self.launch_question.finished.connect(lambda _code: self._launch_answered(spec, hosts, plans))
            self.launch_question.open()
            return []
        return self._start(spec, hosts, {})

    def _launch_plans(self, hosts: list[HostProfile], spec: RunSpec) -> dict[str, LaunchPlan]:
        book = self.provider.book() if hasattr(self.provider, "book") else None
        return {h.name: plan_launch(h.name, h.ec2, spec.to_dict(), 1,
                                    book.price(h.ec2.instance_type, h.ec2.region, h.ec2.market).usd_per_hour
                                    if book else None)
                for h in hosts if h.ec2 is not None}

    def _launch_answered(self, spec: RunSpec, hosts: list[HostProfile], plans: dict[str, LaunchPlan]) -> None:
        box, self.launch_question = self.launch_question, None
        if box is None or not launch_accepted(box):
            self.status_label.setText("Nothing launched")
            return
        self._start(spec, hosts, plans)

    def _start(self, spec: RunSpec, hosts: list[HostProfile], plans: dict[str, LaunchPlan]) -> list[LiveRunView]:
        views = self._start_on(spec, hosts, plans)
        stored = self.workload.stored_copy_sentence(spec)
        if stored is not None:  # Run again with a stored run's copy of the model file: each view says so
            for view in views:
                view.note_stored_copy(*stored)
        return views

    def _start_on(self, spec: RunSpec, hosts: list[HostProfile], plans: dict[str, LaunchPlan]) -> list[LiveRunView]:
        self.runs.clear()
        self.errors.clear()
        if len(hosts) > 1 and spec.workload == "train" and self.distributed.isChecked():
            return self._start_cluster(spec, hosts)
        if len(hosts) == 1 and hosts[0].slurm is not None:
            return self._start_slurm(spec, hosts[0], self.slurm_nodes.value())
        views = []
        for host in hosts:
            title = "This computer" if host.local else host.name
            plan = plans.get(host.name)
            try:
                transport = self.provider.transport_for(host, Ec2RunOptions(plan.max_minutes)) if plan else \
                    self.provider.transport_for(host)
            except (NeuronBenchError, ValueError) as exc:
                self.errors.show_exception(f"{title}: cannot start a run", exc)
                continue
            run_id = new_run_id()
            recorder = self._recorder_for(host, spec, run_id)
            job = self.bridge.start_run(transport, spec, run_id=run_id, recorder=recorder)
            if isinstance(transport, Ec2Transport):
                transport.options.on_stage = job.stage.emit  # launch progress into the live view
            views.append(self._show_job(job, title))
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

    def _recorder_for(self, host: HostProfile, spec: RunSpec, run_id: str,
                      host_name: str | None = None) -> RunRecorder | None:
        """Start the run's row in the store (a store failure costs the history, never the run)."""
        try:
            return RunRecorder.start(self.store, self.book, host_name or host.name, spec, run_id,
                                     declared_type=host.instance_type, declared_region=host.region,
                                     on_error=self.store_problem.emit)
        except (NeuronBenchError, OSError) as exc:
            self._warn(f"run {run_id} on {host.name} is not recorded: {exc}")
            return None

    def _show_job(self, job: RunJob, title: str) -> LiveRunView:
        job.failed.connect(self._on_job_failed)
        job.done.connect(self._on_recorded)
        return self.runs.add_run(job, title)

    @Slot(object)
    def _on_job_failed(self, exc: BaseException) -> None:
        self.hosts.refuse_if_changed_key(exc)
        self.run_recorded.emit()
        self.offer_reattach()  # a run whose host went away for good goes on there: it can be re-attached

    @Slot(object)
    def _on_recorded(self, _result: object) -> None:
        self.run_recorded.emit()
        self.hosts.list_owned_instances()

    def _on_run_finished(self, view: LiveRunView) -> None:
        left = self.runs.active_views()
        statuses = sorted({v.state.status for v in self.runs.views})
        self.status_label.setText(f"{len(left)} run(s) going" if left else "Finished: " + ", ".join(statuses))
        self._update_actions()

    # ------------------------------------------------------------ history, compare, prices
    def show_view(self, view: QWidget) -> None:
        """Bring the tab holding ``view`` (the live runs, the history or the comparison) to the front."""
        for index in range(self.tabs.count()):
            page = self.tabs.widget(index)
            if page is view or (isinstance(page, QScrollArea) and page.widget() is view):
                self.tabs.setCurrentIndex(index)

    def current_view(self) -> QWidget:
        page = self.tabs.currentWidget()
        return page.widget() if isinstance(page, QScrollArea) else page

    @Slot(list)
    def show_comparison(self, run_ids: list[str]) -> None:
        self.compare.set_runs(run_ids)
        self.show_view(self.compare)

    @Slot(object, str)
    def rerun(self, spec_dict: dict, host_name: str) -> list[LiveRunView]:
        """Run a stored run's spec again on its host: the form shows the spec, only that host is ticked."""
        if self.runs.active_views():
            self.errors.show_error("Run again", "runs are still going: wait for them or cancel them first")
            return []
        if host_name not in self.sidebar.rows:
            self.errors.show_error("Run again", f"the host {host_name!r} is not saved any more; add it again "
                                   "(same name), or tick another host and press Run")
            return []
        try:
            self.workload.show_spec(RunSpec.from_dict(spec_dict))
        except (NeuronBenchError, ValueError, TypeError) as exc:
            self.errors.show_exception("Run again", exc)
            return []
        for name in self.sidebar.rows:
            self.sidebar.set_checked(name, name == host_name)
        self.show_view(self.runs)
        return self.start_runs()

    @Slot()
    def override_price(self) -> PriceOverrideDialog:
        current = self.hosts.current_host()
        row = self.sidebar.rows.get(current.name) if current is not None else None
        dialog = PriceOverrideDialog(self.paths, row.instance_type if row else None,
                                     current.region if current else None, parent=self, book=self.book)
        dialog.prices_changed.connect(self._prices_changed)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        self.price_dialog = dialog
        dialog.open()
        return dialog

    @Slot(list)
    def _prices_changed(self, _entries: list) -> None:
        """A price was set: new runs, the sidebar and the comparison use it."""
        self._reload_prices()
        self.hosts.reprice()
        if self.compare.run_ids:
            self.compare.recompute()
        self.status_label.setText("Price saved: runs, hosts and comparisons now use it")

    @Slot(list)
    def _runs_priced(self, run_ids: list[str]) -> None:
        """Runs got an instance type after the fact: a comparison showing them prices them again."""
        if set(run_ids) & set(self.compare.run_ids):
            self.compare.recompute()

    def _reload_prices(self) -> None:
        reload_provider = getattr(self.provider, "reload_prices", None)
        if reload_provider is not None:
            reload_provider()
        try:
            self.book = load_pricebook(self.paths)
        except NeuronBenchError as exc:
            self.book = None
            self._warn(f"runs are recorded without prices: {exc}")

    # ------------------------------------------------------------ model names
    @Slot(object)
    def _on_models(self, catalog: ModelCatalog) -> None:
        self.workload.model.set_names(catalog.names, f"timm {catalog.timm_version}")
        self.workload.model.set_names(catalog.torchvision_names, f"torchvision {catalog.torchvision_version}",
                                      source="torchvision")

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


def _scrolled(view: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setFrameShape(QScrollArea.Shape.NoFrame)
    area.setWidget(view)
    return area


def _heading(text: str) -> QLabel:
    label = QLabel(f"<b>{text}</b>")
    label.setTextFormat(Qt.TextFormat.RichText)
    return label
