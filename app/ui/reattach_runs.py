"""The window's runs left going on their hosts: finding them in the history, and re-attaching to one.

A mixin of MainWindow (it uses the window's run store, provider, bridge, runs area, banner
and error panel); multi-node runs re-attach through ClusterRunsMixin._reattach_cluster.
"""
from __future__ import annotations

from app.core.errors import NeuronBenchError
from app.core.quoting import clean
from app.services.recorder import RunRecorder
from app.services.store import StoreError
from app.ui.widgets.live_run_view import LiveRunView
from remote_agent.protocol import RunSpec


class ReattachMixin:
    """``unfinished_runs``, ``offer_reattach`` and ``reattach`` for MainWindow."""

    def unfinished_runs(self) -> list:
        """Stored runs that never ended here and nobody is recording now (their hosts may still run them)."""
        try:
            return self.store.list_runs(limit=200, status="unfinished")
        except (NeuronBenchError, OSError) as exc:
            self._warn(f"cannot read the run history: {exc}")
            return []

    def offer_reattach(self) -> None:
        self.reattach_banner.offer([(run.run_id, run.host) for run in self.unfinished_runs()])

    def reattach_runs(self, run_ids: list[str]) -> list[LiveRunView]:
        return [view for run_id in run_ids if (view := self.reattach(run_id)) is not None]

    def reattach(self, run_id: str) -> LiveRunView | None:
        """Follow a run left going on its host: replay what it did, then stream it to its end, recording it."""
        try:
            stored = self.store.load(run_id)
        except StoreError as exc:
            self.errors.show_exception("Re-attach", exc)
            return None
        title = "This computer" if stored.host == "local" else stored.host
        held = list(self.store.events(run_id))
        if held and held[0].get("type") == "hello" and isinstance(held[0].get("nodes"), list):
            return self._reattach_cluster(stored, held)
        host = next((h for h in self.provider.hosts() if h.name == stored.host), None)
        if host is None:
            self.errors.show_error(f"{title}: cannot re-attach run {run_id}",
                                   f"the host {stored.host!r} is not saved any more; add it again (same name) "
                                   "to re-attach, or run `neuronbench runs attach` with --host")
            return None
        if any(view.job.run_id == run_id for view in self.runs.active_views()):
            return None
        try:
            spec = RunSpec.from_dict(stored.spec or {})
            transport = self.provider.transport_for(host)
            recorder, _last = RunRecorder.resume(self.store, self.book, run_id, on_error=self.store_problem.emit)
        except (NeuronBenchError, ValueError) as exc:
            self.errors.show_exception(f"{title}: cannot re-attach run {run_id}", exc)
            return None
        if not self.runs.active_views():
            self.runs.clear()
        # From the first event: the view redraws the whole run; the store skips the events it holds.
        job = self.bridge.start_run(transport, spec, run_id=run_id, recorder=recorder, attach_from=1)
        view = self._show_job(job, title)
        job.start()
        self.reattach_banner.forget(run_id)
        self.show_view(self.runs)
        self.status_label.setText(clean(f"Re-attached to run {run_id} on {title}"))
        self._update_actions()
        return view

    def _warn(self, message: str) -> None:
        self.errors.show_error("Run history", message)
