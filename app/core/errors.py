"""Typed errors, written once: each carries one sentence a user can act on.

The CLI prints ``str(error)`` and exits non-zero; the GUI shows the same sentence
in its error panel with ``detail`` behind a "details" expander.
"""
from __future__ import annotations


class NeuronBenchError(Exception):
    """Base class: ``str()`` is the user-facing sentence, ``detail`` the evidence."""

    exit_code = 1

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.detail = detail


class BadSpecError(NeuronBenchError):
    """The benchmark request is invalid (caught before anything runs).

    ``field`` names the RunSpec field at fault when one does (None otherwise).
    """

    exit_code = 2
    field: str | None = None


class ConnectError(NeuronBenchError):
    """The host could not be reached (DNS, refused, timeout)."""


class AuthError(NeuronBenchError):
    """The host refused our credentials."""


class HostKeyError(NeuronBenchError):
    """The host's key is unknown (and not confirmed) or has changed (``changed``: never to be waved through)."""

    def __init__(self, message: str, detail: str = "", changed: bool = False) -> None:
        super().__init__(message, detail)
        self.changed = changed


class DeployError(NeuronBenchError):
    """The agent could not be installed or started on the host."""


class AgentError(NeuronBenchError):
    """The agent reported a failure (an ``error`` event) or died without ending its stream."""

    def __init__(self, message: str, detail: str = "", kind: str = "runtime") -> None:
        super().__init__(message, detail)
        self.kind = kind


class ProtocolViolation(NeuronBenchError):
    """The agent's stream broke protocol v1 (wrong version, bad line, seq out of order)."""


class CloudError(NeuronBenchError):
    """AWS refused or failed a request: no credentials, a quota, no capacity, an unknown key pair, ..."""

    def __init__(self, message: str, detail: str = "", code: str = "") -> None:
        super().__init__(message, detail)
        self.code = code


class InstanceGoneError(NeuronBenchError):
    """The instance a run was on went away mid-run (a spot interruption, or terminated from outside)."""


class SchedulerError(NeuronBenchError):
    """The cluster's scheduler (Slurm) refused or lost a job: its own message, in one sentence."""
