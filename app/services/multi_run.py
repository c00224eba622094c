"""One spec on several hosts at once: a thread per host, each host's repeats one after another.

One host failing (unreachable, refused key, agent died) never stops the
others: its runs become failed Results that say why, in the list returned.
Callbacks for a host's runs are called on that host's thread (on the calling
thread when there is only one host), so a listener shared by hosts must be
thread-safe.
"""
from __future__ import annotations

import threading
import traceback
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from app.core.errors import (
    AuthError,
    CloudError,
    ConnectError,
    DeployError,
    HostKeyError,
    InstanceGoneError,
    NeuronBenchError,
)
from app.core.results import Result, failed_result
from app.services.run_group import RunGroup
from app.services.session import Detached, Event, RunSession
from app.services.transport import Transport
from remote_agent.protocol import RunSpec

# Errors that say the host cannot be used at all: its remaining repeats are not tried.
HOST_ERRORS = (ConnectError, AuthError, HostKeyError, DeployError, CloudError, InstanceGoneError)


@dataclass(frozen=True)
class RunTicket:
    """Which run a listener is for."""

    host: str
    run_id: str
    repeat: int  # 1-based
    repeats: int


@dataclass
class RunListener:
    on_event: Callable[[Event], None] | None = None
    on_notice: Callable[[str], None] | None = None
    # Sees every run's final Result (failed ones too) and may return an amended one (e.g. priced and stored).
    on_result: Callable[[Result], Result] | None = None
    # The run goes on on its host without us (the group stopped following it): it has no Result here.
    on_detached: Callable[[], None] | None = None


def run_on_hosts(transports: Sequence[Transport], spec: RunSpec, repeats: int = 1,
                 listener_for: Callable[[RunTicket], RunListener] | None = None,
                 session_options: dict[str, Any] | None = None, group: RunGroup | None = None) -> list[Result]:
    """Run ``spec`` ``repeats`` times on every transport's host; Results in host order, then repeat order.

    With a ``group``, its ``cancel()`` cancels every run in flight and starts no further
    repeat, and its ``detach()`` leaves them running: those have no Result in the list.
    """
    results: list[list[Result]] = [[] for _ in transports]

    def one_host(index: int, transport: Transport) -> None:
        try:
            host_runs(index, transport)
        finally:
            transport.release()  # Ctrl-C or a bug never leaves a launched host (EC2) behind

    def host_runs(index: int, transport: Transport) -> None:
        host_error: NeuronBenchError | None = None
        for repeat in range(1, repeats + 1):
            if group is not None and group.stopped:
                return  # Ctrl-C: no further repeat starts
            session = RunSession(transport, spec, **(session_options or {}))
            listener = listener_for(RunTicket(transport.host, session.run_id, repeat, repeats)) \
                if listener_for else RunListener()
            # Until its Result is recorded (listener.on_result), a Ctrl-C waits for this run (RunGroup.settled).
            with group.holding(session) if group is not None else nullcontext():
                outcome = one_run(transport, session, listener, host_error, repeat)
            if outcome is None:
                return  # left running on its host
            result, host_error = outcome
            results[index].append(result)

    def one_run(transport: Transport, session: RunSession, listener: RunListener,
                host_error: NeuronBenchError | None, repeat: int) -> tuple[Result, NeuronBenchError | None] | None:
        """One repeat followed and recorded: its Result and the host's error so far (None: left running)."""
        if host_error is not None:
            result = failed_result(transport.host, spec.to_dict(), session.run_id, host_error)
        else:
            session.on_event, session.on_notice = listener.on_event, listener.on_notice
            try:
                result = group.follow(session) if group is not None else session.run()
            except Detached:
                if not session.launched:
                    result = session.not_started_result()
                else:
                    if listener.on_detached is not None:
                        listener.on_detached()
                    return None
            except HOST_ERRORS as exc:
                host_error = exc
                result = failed_result(transport.host, spec.to_dict(), session.run_id, exc)
            except NeuronBenchError as exc:
                result = failed_result(transport.host, spec.to_dict(), session.run_id, exc)
            except Exception as exc:  # a bug must not take the other hosts down: report it as this host's failure
                error = NeuronBenchError(f"internal error while running on {transport.host}: "
                                         f"{type(exc).__name__}: {exc}", detail=traceback.format_exc())
                result = failed_result(transport.host, spec.to_dict(), session.run_id, error)
        if repeats > 1:
            result["repeat"] = {"index": repeat, "of": repeats}
        result = transport.run_ended(result, last=repeat == repeats) or result
        if listener.on_result is not None:
            result = listener.on_result(result)
        return result, host_error

    if len(transports) == 1:
        one_host(0, transports[0])
    else:
        threads = [threading.Thread(target=one_host, args=(i, t), name=f"run-{t.host}", daemon=True)
                   for i, t in enumerate(transports)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return [result for host_results in results for result in host_results]
