"""Where service callbacks (called on named worker threads) become queued Qt signals (STYLE.md habit 5).

Services never see Qt; widgets never see a worker thread.  A ``RunJob`` wraps a
``ControlledRun`` and re-emits its callbacks as signals; a ``Call`` runs one
blocking service function (a probe, the model list) on its own thread.  The
signals carry plain Python objects and are connected with
``Qt.QueuedConnection``, so every slot runs on the UI thread in arrival order.
``Bridge.shutdown`` leaves every run going on its host and waits for the
threads, so nothing outlives the window.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal

from app.services.cluster_run import ClusterRun
from app.services.recorder import RunRecorder
from app.services.run_control import ControlledRun
from app.services.transport import Transport
from remote_agent.protocol import RunSpec

QUEUED = Qt.ConnectionType.QueuedConnection
SHUTDOWN_TIMEOUT_S = 15.0


class RunJob(QObject):
    """One run on one host, as signals."""

    event = Signal(object)      # a protocol event (dict), in seq order
    done = Signal(object)       # the Result dict
    failed = Signal(object)     # the exception (a NeuronBenchError carries the sentence and detail)
    detached = Signal(str)      # the run id, when the app stopped following a run that goes on
    warning = Signal(str)       # e.g. a cancel that could not be delivered
    stage = Signal(str, str)    # a launched host's progress (stage, sentence): pending, running, SSH up, deployed
    notice = Signal(str)        # the session's sentences: connection lost and back, an event refused
    refused = Signal(int)       # how many of the agent's events protocol v1 refused so far

    def __init__(self, transport: Transport | None, spec: RunSpec, parent: QObject | None = None, *,
                 run_id: str | None = None, recorder: RunRecorder | None = None,
                 attach_from: int | None = None, cluster: ClusterRun | None = None,
                 held_events: list[dict[str, Any]] | None = None) -> None:
        super().__init__(parent)
        self.control = ControlledRun(transport, spec, on_event=self.event.emit, on_done=self.done.emit,
                                     on_error=self.failed.emit, on_detached=self.detached.emit,
                                     on_warning=self.warning.emit, run_id=run_id, recorder=recorder,
                                     attach_from=attach_from, cluster=cluster, held_events=held_events,
                                     on_notice=self.notice.emit, on_refused=self.refused.emit)
        self.attached = attach_from is not None or held_events is not None
        self.cluster = cluster

    @property
    def host(self) -> str:
        return self.control.host

    @property
    def run_id(self) -> str:
        return self.control.run_id

    @property
    def spec(self) -> RunSpec:
        return self.control.spec

    def start(self) -> None:
        self.control.start()

    def cancel(self) -> None:
        self.control.cancel()

    def detach(self) -> None:
        self.control.detach()

    def is_alive(self) -> bool:
        return self.control.is_alive()


class Call(QObject):
    """One blocking function on a named thread; ``done(value)`` or ``failed(exception)`` on the UI thread."""

    done = Signal(object)
    failed = Signal(object)

    def __init__(self, name: str, fn: Callable[..., Any], args: tuple[Any, ...], parent: QObject | None) -> None:
        super().__init__(parent)
        self._fn, self._args = fn, args
        self.thread = threading.Thread(target=self._main, name=name, daemon=True)

    def _main(self) -> None:
        try:
            value = self._fn(*self._args)
        except BaseException as exc:  # shown to the user through the error panel
            self.failed.emit(exc)
        else:
            self.done.emit(value)


class Bridge(QObject):
    """Starts runs and calls off the UI thread, and knows every thread it started."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._jobs: list[RunJob] = []
        self._calls: list[Call] = []

    def start_run(self, transport: Transport, spec: RunSpec, *, run_id: str | None = None,
                  recorder: RunRecorder | None = None, attach_from: int | None = None) -> RunJob:
        """A RunJob, not yet started: connect to its signals (queued), then ``start()`` it.

        ``recorder`` stores its events and end on the run's thread; ``attach_from``
        follows a run started earlier (by its ``run_id``) instead of starting one.
        """
        self._prune()
        job = RunJob(transport, spec, self, run_id=run_id, recorder=recorder, attach_from=attach_from)
        self._jobs.append(job)
        return job

    def start_cluster(self, cluster: ClusterRun, spec: RunSpec, *, recorder: RunRecorder | None = None,
                      held_events: list[dict[str, Any]] | None = None) -> RunJob:
        """A RunJob for one training run across several hosts (``held_events``: re-attach to one)."""
        self._prune()
        job = RunJob(None, spec, self, run_id=cluster.run_id, recorder=recorder, cluster=cluster,
                     held_events=held_events)
        self._jobs.append(job)
        return job

    def call(self, name: str, fn: Callable[..., Any], *args: Any,
             on_done: Callable[[Any], None] | None = None,
             on_failed: Callable[[BaseException], None] | None = None) -> Call:
        """Run ``fn(*args)`` on a thread called ``name``; the callbacks should be methods of living QObjects."""
        self._prune()
        call = Call(name, fn, args, self)
        if on_done is not None:
            call.done.connect(on_done, QUEUED)
        if on_failed is not None:
            call.failed.connect(on_failed, QUEUED)
        # Connected last, so posted after the callbacks: the Call goes once they have run.
        call.done.connect(call.deleteLater, QUEUED)
        call.failed.connect(call.deleteLater, QUEUED)
        self._calls.append(call)
        call.thread.start()
        return call

    def shutdown(self, timeout: float = SHUTDOWN_TIMEOUT_S) -> list[str]:
        """Leave every run going on its host, and wait for our threads; returns the names still alive."""
        for job in self._jobs:
            if job.is_alive():
                job.detach()
        for job in self._jobs:
            job.control.join(timeout)
        for call in self._calls:
            call.thread.join(timeout)
        left = [job.control.host for job in self._jobs if job.is_alive()]
        left += [call.thread.name for call in self._calls if call.thread.is_alive()]
        self._prune()
        return left

    def _prune(self) -> None:
        """Forget finished threads (their QObjects live on with their parent or until deleteLater)."""
        self._jobs = [job for job in self._jobs if job.is_alive()]
        self._calls = [call for call in self._calls if call.thread.is_alive()]
