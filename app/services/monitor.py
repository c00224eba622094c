"""Watching a host's telemetry: the agent's ``monitor`` command as a stream of ``sample`` events.

The CLI's ``neuronbench monitor`` draws them in a terminal; the desktop app can
feed the same events to its live charts.  ``on_event`` is called on the thread
that calls ``run()``, once per validated event, in seq order.
"""
from __future__ import annotations

from app.core.errors import AgentError, BadSpecError
from app.services.session import EventCallback, EventStream
from app.services.transport import AgentProcess, Transport
from remote_agent.protocol import TELEMETRY_PERIOD_S, check_telemetry_period

STOP_GRACE_S = 3.0


def monitor_args(period_s: float = TELEMETRY_PERIOD_S, duration_s: float | None = None) -> list[str]:
    """The agent's argv for a watch; BadSpecError names the option to fix."""
    problem = check_telemetry_period(period_s)
    if problem:
        raise BadSpecError(f"--period {problem}")
    args = ["monitor", "--period", repr(float(period_s))]
    if duration_s is not None:
        if not duration_s > 0:
            raise BadSpecError(f"--duration must be a positive number of seconds, not {duration_s:g}")
        args += ["--duration", repr(float(duration_s))]
    return args


class MonitorSession:
    """One watch of one host, until ``duration_s`` passes or ``stop()``."""

    def __init__(self, transport: Transport, period_s: float = TELEMETRY_PERIOD_S, duration_s: float | None = None,
                 on_event: EventCallback | None = None) -> None:
        self.transport = transport
        self.args = monitor_args(period_s, duration_s)
        self.on_event = on_event
        self.process: AgentProcess | None = None
        self.stream: EventStream | None = None

    def run(self) -> None:
        """Stream until the agent ends the watch.

        Raises AgentError when the agent refuses (an ``error`` event) or dies without
        ending its stream, ProtocolViolation when the stream is malformed.
        """
        self.process = self.transport.start(self.args)
        self.stream = EventStream(self.process, self.transport.host, self.on_event)
        self.stream.pump()
        error = self.stream.first("error")
        if error is not None:
            raise AgentError(f"monitor on {self.transport.host}: {error['message']}",
                             detail=error.get("detail", ""), kind=error.get("kind", "runtime"))
        if self.stream.end is None:
            raise self.stream.died_error("the monitor ended")

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """End the watch: a local agent that got the terminal's Ctrl-C ends by itself within
        ``grace_s``; otherwise it is killed (a remote one then stops as its stdout closes)."""
        if self.process is not None and self.process.wait(timeout=grace_s) is None:
            self.process.kill()
