"""Before the app launches EC2 instances: what they may cost, and the user's yes.

The ceiling comes from each instance's dead-man switch (it cannot live longer),
the same sentence `neuronbench run` prints.  "Cancel" is the default button.
"""
from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QMessageBox, QWidget

from app.core.ec2_cost import LaunchPlan, confirmation_sentence


def launch_question(parent: QWidget, plans: Sequence[LaunchPlan]) -> QMessageBox:
    """A window-modal question (open it with ``open()``); ``launch_accepted`` reads the answer."""
    sentence = confirmation_sentence(plans)
    head, _, details = sentence.partition(" -- ")
    box = QMessageBox(parent)
    box.setObjectName("launch-confirm")
    box.setIcon(QMessageBox.Icon.Question)
    box.setWindowTitle("Launch EC2 instances?")
    box.setText(f"Launch {head}?")
    box.setInformativeText("\n".join(f"• {part}" for part in details.split("; ")) +
                           "\n\nEach is terminated when its run ends, fails or is cancelled.")
    launch = box.addButton("Launch", QMessageBox.ButtonRole.AcceptRole)
    launch.setObjectName("launch")
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    box.setDefaultButton(cancel)
    box.setEscapeButton(cancel)
    return box


def launch_accepted(box: QMessageBox) -> bool:
    button = box.clickedButton()
    return button is not None and button.objectName() == "launch"
