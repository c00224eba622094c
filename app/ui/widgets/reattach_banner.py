"""The bar that offers to re-attach runs a previous session left going on their hosts."""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

SHOWN_IDS = 3


class ReattachBanner(QFrame):
    """Hidden until ``offer`` names runs; "Re-attach" asks for all of them, "Not now" hides the bar."""

    reattach = Signal(list)  # run ids

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("reattach-banner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.runs: list[tuple[str, str]] = []
        self.text = QLabel()
        self.text.setWordWrap(True)
        self.reattach_button = QPushButton("Re-attach")
        self.reattach_button.setToolTip("follow these runs again: what they did meanwhile is replayed, "
                                        "then they stream live and are recorded to their end")
        self.dismiss_button = QPushButton("Not now")
        self.dismiss_button.setToolTip("they stay in the history, where each can be re-attached later")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.text, 1)
        layout.addWidget(self.reattach_button)
        layout.addWidget(self.dismiss_button)
        self.reattach_button.clicked.connect(lambda: self.reattach.emit([run_id for run_id, _ in self.runs]))
        self.dismiss_button.clicked.connect(self.hide)
        self.hide()

    def offer(self, runs: list[tuple[str, str]]) -> None:
        """(run id, host) of each run left going; an empty list hides the bar."""
        self.runs = list(runs)
        if not self.runs:
            self.hide()
            return
        names = ", ".join(f"{run_id} on {host}" for run_id, host in self.runs[:SHOWN_IDS])
        more = f" and {len(self.runs) - SHOWN_IDS} more" if len(self.runs) > SHOWN_IDS else ""
        self.text.setText(f"{len(self.runs)} run(s) did not finish while NeuronBench followed them "
                          f"({names}{more}). They may still be running on their hosts.")
        self.show()

    def forget(self, run_id: str) -> None:
        self.offer([run for run in self.runs if run[0] != run_id])
