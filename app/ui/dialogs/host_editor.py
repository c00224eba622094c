"""The host editor: one profile's fields, checked as you type, and "Test connection" before saving.

The fields and their tooltips come from ``HostProfile`` (the same help the
CLI's ``hosts add --help`` prints); validity is decided by ``HostProfile``
itself, so the dialog and ``neuronbench hosts add`` accept exactly the same
profiles.  Testing runs ``check_host`` (connect, host key, Python, agent,
probe) on a worker thread through the bridge; its questions (an unknown host
key) come up as the app's dialogs.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal, Slot
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.core.ec2_launch import Ec2Launch
from app.core.errors import BadSpecError
from app.core.hosts import SSH_PORT, HostProfile
from app.ui import theme
from app.ui.dialogs.ec2_fields import Ec2Fields
from app.ui.dialogs.slurm_fields import SlurmFields
from app.ui.widgets.error_panel import describe_exception
from app.ui.widgets.hosts_sidebar import libraries_line

_HELP = {name: meta["help"] for name, meta in HostProfile.field_help().items()}
_TEXT_FIELDS = ("name", "hostname", "user", "identity_file", "proxy_jump", "python")

# test_connection(profile, say) -> report; ``say`` is called on the worker thread.
Tester = Callable[[HostProfile, Callable[[str], None]], dict[str, Any]]


class HostEditor(QDialog):
    """Add (``profile=None``) or edit a host.  ``profile()`` is the valid result after ``accept``."""

    progress = Signal(str)  # a test step's sentence, from the worker thread (queued to the UI thread)

    def __init__(self, taken_names: list[str], profile: HostProfile | None = None, *,
                 instance_types: list[str] = (), regions: list[str] = (), start_test=None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("host-editor")
        self.setWindowTitle("Edit host" if profile else "Add a host")
        self.setMinimumWidth(520)  # an EC2 DNS name is long; it should be readable whole
        self.taken = {n for n in taken_names if profile is None or n != profile.name}
        self._start_test = start_test  # start_test(profile, say, on_done, on_failed) on a worker thread
        self._valid: HostProfile | None = None
        self.testing = False

        self.edits: dict[str, QLineEdit] = {}
        form = QFormLayout()
        for name in _TEXT_FIELDS:
            edit = QLineEdit()
            edit.setObjectName(name)
            edit.setToolTip(_HELP[name])
            edit.setPlaceholderText(_placeholder(name))
            self.edits[name] = edit
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(SSH_PORT)
        self.port.setToolTip(_HELP["port"])
        self.local = QCheckBox("This computer (no SSH)")
        self.local.setToolTip(_HELP["local"])
        self.ec2 = QCheckBox("Launch on EC2 for each run (terminated after it)")
        self.ec2.setObjectName("launch-on-ec2")
        self.ec2.setToolTip(_HELP["ec2"])
        self.ec2_fields = Ec2Fields()
        self.slurm = QCheckBox("Slurm cluster login node (runs go through sbatch, on N nodes)")
        self.slurm.setObjectName("slurm-login-node")
        self.slurm.setToolTip(_HELP["slurm"])
        self.slurm_fields = SlurmFields()
        self.instance_type = _combo(instance_types, _HELP["instance_type"], "detected by the probe on EC2")
        self.region = _combo(regions, _HELP["region"], "detected by the probe on EC2")
        browse = QPushButton("Browse…")
        browse.setToolTip("choose a private key file")
        browse.clicked.connect(self._browse_key)
        key_row = QHBoxLayout()
        key_row.addWidget(self.edits["identity_file"], 1)
        key_row.addWidget(browse)

        form.addRow("Name", self.edits["name"])
        form.addRow("", self.local)
        form.addRow("", self.ec2)
        form.addRow(self.ec2_fields)
        form.addRow("", self.slurm)
        form.addRow(self.slurm_fields)
        form.addRow("Host name or IP", self.edits["hostname"])
        form.addRow("Port", self.port)
        form.addRow("User", self.edits["user"])
        form.addRow("Key file", key_row)
        form.addRow("ProxyJump", self.edits["proxy_jump"])
        form.addRow("Remote Python", self.edits["python"])
        form.addRow("Instance type", self.instance_type)
        form.addRow("Region", self.region)

        self.problem = QLabel()
        self.problem.setObjectName("problem")
        self.problem.setWordWrap(True)
        theme.tint_error(self.problem)
        self.test_button = QPushButton("Test connection")
        self.test_button.setToolTip("connect, check the host key, Python and agent, and probe the host")
        self.test_button.setVisible(start_test is not None)
        self.test_log = QPlainTextEdit()
        self.test_log.setObjectName("test-log")
        self.test_log.setReadOnly(True)
        self.test_log.setMaximumHeight(120)
        self.test_log.hide()
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        bottom = QHBoxLayout()
        bottom.addWidget(self.test_button)
        bottom.addStretch(1)
        bottom.addWidget(self.buttons)

        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.problem)
        layout.addWidget(self.test_log)
        layout.addLayout(bottom)

        if profile is not None:
            self._fill(profile)
        for edit in self.edits.values():
            edit.textChanged.connect(self._check)
        self.port.valueChanged.connect(self._check)
        self.local.toggled.connect(self._check)
        self.ec2.toggled.connect(self._check)
        self.ec2_fields.changed.connect(self._check)
        self.slurm.toggled.connect(self._check)
        self.slurm_fields.changed.connect(self._check)
        self.instance_type.currentTextChanged.connect(self._check)
        self.region.currentTextChanged.connect(self._check)
        self.test_button.clicked.connect(self.test_connection)
        self.progress.connect(self._log, Qt.ConnectionType.QueuedConnection)
        self._check()

    # ------------------------------------------------------------ values
    def _fill(self, profile: HostProfile) -> None:
        for name, edit in self.edits.items():
            edit.setText(str(getattr(profile, name)))
        self.port.setValue(profile.port)
        self.local.setChecked(profile.local)
        self.instance_type.setCurrentText(profile.instance_type)
        self.region.setCurrentText(profile.region)
        self.ec2.setChecked(profile.ec2 is not None)
        if profile.ec2 is not None:
            self.ec2_fields.fill(profile.ec2)
        self.slurm.setChecked(profile.slurm is not None)
        if profile.slurm is not None:
            self.slurm_fields.fill(profile.slurm)

    def values(self) -> dict[str, Any]:
        data: dict[str, Any] = {name: edit.text().strip() for name, edit in self.edits.items()}
        data.update(port=self.port.value(), local=self.local.isChecked(),
                    instance_type=self.instance_type.currentText().strip(), region=self.region.currentText().strip())
        return data

    def profile(self) -> HostProfile | None:
        """The profile as entered, or None while the form is not valid."""
        return self._valid

    @Slot()
    def _check(self) -> None:
        data = self.values()
        launch = self.ec2.isChecked()
        slurm = self.slurm.isChecked()
        self.local.setEnabled(not launch and not slurm)
        self.ec2.setEnabled(not data["local"] and not slurm)
        self.ec2_fields.setVisible(launch)
        self.slurm.setEnabled(not data["local"] and not launch)
        self.slurm_fields.setVisible(slurm)
        ssh_only = not data["local"]
        for name in ("hostname", "user", "identity_file", "proxy_jump"):
            self.edits[name].setEnabled(ssh_only and not (launch and name in ("hostname", "proxy_jump")))
        self.port.setEnabled(ssh_only and not launch)
        self.test_button.setVisible(self._start_test is not None and not launch)  # tested by running it
        if data["local"]:  # the SSH fields are kept on screen but not saved for this computer
            data.update(hostname="", user="", identity_file="", proxy_jump="", port=SSH_PORT)
        problem = ""
        self._valid = None
        if launch and not data["local"]:
            data.update(hostname="", proxy_jump="", port=SSH_PORT)
            problem = self._ec2_problem(data)
        if slurm and not problem:
            try:
                data["slurm"] = self.slurm_fields.settings()
            except BadSpecError as exc:
                problem = str(exc)
        if problem:
            pass  # the launch or Slurm setting is incomplete: said before anything else
        elif not data["name"]:
            problem = "give the host a name (you pick it: it is what the app and `--host` call it)"
        elif data["name"] in self.taken:
            problem = f"a host named {data['name']!r} exists already; choose another name"
        else:
            try:
                self._valid = HostProfile(**data)
            except BadSpecError as exc:
                problem = str(exc)
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        self.save_button.setEnabled(self._valid is not None)
        self.test_button.setEnabled(self._valid is not None and not self.testing)

    def _ec2_problem(self, data: dict[str, Any]) -> str:
        """Build the launch setting into ``data``; the sentence when it cannot be built yet."""
        missing = [label for label, value in (("an instance type", data["instance_type"]), ("a region",
                   data["region"]), ("the key pair's name", self.ec2_fields.values()["key_name"]),
                   ("its private key file", data["identity_file"])) if not value]
        if missing:
            return f"to launch on EC2, give {', '.join(missing)}"
        try:
            data["ec2"] = Ec2Launch(instance_type=data["instance_type"], region=data["region"],
                                    **self.ec2_fields.values())
        except BadSpecError as exc:
            return str(exc)
        return ""

    # ------------------------------------------------------------ test connection
    @Slot()
    def test_connection(self) -> None:
        profile = self._valid
        if profile is None or self._start_test is None or self.testing:
            return
        self.testing = True
        self.test_button.setEnabled(False)
        self.test_log.clear()
        self.test_log.show()
        self._log(f"testing {profile.address}…")
        self._start_test(profile, self.progress.emit, self._tested, self._test_failed)

    @Slot(object)
    def _tested(self, report: dict[str, Any]) -> None:
        env = report.get("env") or {}
        what = env.get("instance_type") or (f"{env['neuron_cores']} NeuronCores" if env.get("neuron_cores") else
                                            f"{env.get('gpus') or 0} GPUs, {(env.get('cpu') or {}).get('count')} CPUs")
        self._log(f"OK: the agent answered ({what})")
        self._log(libraries_line(env))
        self._end_test()

    @Slot(object)
    def _test_failed(self, exc: BaseException) -> None:
        message, _detail = describe_exception(exc)
        self._log(f"FAILED: {message}")
        self._end_test()

    def _end_test(self) -> None:
        self.testing = False
        self._check()

    @Slot(str)
    def _log(self, text: str) -> None:
        self.test_log.appendPlainText(text)

    def _browse_key(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Private key file", self.edits["identity_file"].text() or "~/.ssh")
        if path:
            self.edits["identity_file"].setText(path)


def _placeholder(name: str) -> str:
    return {"name": "e.g. trn1-a", "hostname": "e.g. ec2-3-91-0-1.compute-1.amazonaws.com",
            "user": "e.g. ubuntu or ec2-user", "identity_file": "ssh-agent keys, then ~/.ssh/id_*",
            "proxy_jump": "e.g. bastion or ubuntu@10.0.0.5:22", "python": "Neuron venv, else python3"}.get(name, "")


def _combo(items, tip: str, placeholder: str) -> QComboBox:
    combo = QComboBox()
    combo.setEditable(True)
    combo.addItem("")
    combo.addItems(list(items))
    combo.setToolTip(tip)
    combo.lineEdit().setPlaceholderText(placeholder)
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    return combo
