"""Closing the window while runs are going: ask (without a nested event loop), then leave them running.

A mixin of MainWindow (it uses the window's runs area, settings, prompts, bridge and store).
Runs left going are stored as unfinished, and the next start offers to re-attach them.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QCloseEvent
from PySide6.QtWidgets import QMessageBox

from app.ui.widgets.live_run_view import LiveRunView


class ClosingMixin:
    """``closeEvent`` and ``leave_runs_and_close`` for MainWindow."""

    def closeEvent(self, event: QCloseEvent) -> None:
        active = self.runs.active_views()
        if active and not self._close_confirmed:
            event.ignore()
            self._ask_before_closing(active)
            return
        self._save()
        self.runs.stop()
        for view in active:  # stored as unfinished (the recorder abandons them): offered again at the next start
            view.state.mark("detached", "still running on the host")
            view.state.note("info", f"left running on {view.job.host} as run {view.job.run_id}")
        self.prompts.close()  # a connection waiting on a question gets "no", so its thread can end
        self.bridge.shutdown()
        self.store.close()
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
        box.setInformativeText("They keep running on their hosts if you close NeuronBench; the next start "
                               "offers to re-attach them, and nothing they did is lost.")
        box.addButton("Close, leave them running", QMessageBox.ButtonRole.AcceptRole)
        keep = box.addButton("Keep the window open", QMessageBox.ButtonRole.RejectRole)
        box.setDefaultButton(keep)
        box.setWindowModality(Qt.WindowModality.WindowModal)
        box.finished.connect(self._on_close_answer)
        self.close_question = box
        box.open()  # not exec(): no nested event loop, and the runs keep drawing meanwhile

    def _on_close_answer(self, _code: int) -> None:
        box = self.close_question
        if box is None:
            return
        clicked = box.clickedButton()
        self.close_question = None
        box.deleteLater()
        if clicked is not None and box.buttonRole(clicked) == QMessageBox.ButtonRole.AcceptRole:
            self.leave_runs_and_close()
