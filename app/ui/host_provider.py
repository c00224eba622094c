"""Where the hosts sidebar gets its hosts, and a transport for each: today this computer only.

The host store (SSH hosts, issue 4) plugs in by implementing ``HostProvider``:
a list of profiles, a transport per profile and, once the price book lands, a
price per hour.  The sidebar and the run button only talk to this interface.
"""
from __future__ import annotations

from typing import Protocol

from app.core.hosts import LOCAL, HostProfile
from app.paths import AppPaths
from app.services.transport import LocalTransport, Transport


class HostProvider(Protocol):
    def hosts(self) -> list[HostProfile]:
        """Every host, "This computer" (``LOCAL``) first."""
        ...

    def transport_for(self, host: HostProfile) -> Transport:
        """A new transport to ``host`` (connecting happens in ``start``, on a worker thread)."""
        ...

    def price_per_hour(self, host: HostProfile, instance_type: str | None) -> float | None:
        """USD per hour, or None when unknown (shown as N/A)."""
        ...


class LocalHostProvider:
    """This computer, reached without SSH."""

    def __init__(self, paths: AppPaths) -> None:
        self.paths = paths

    def hosts(self) -> list[HostProfile]:
        return [LOCAL]

    def transport_for(self, host: HostProfile) -> Transport:
        if not host.local:
            raise ValueError(f"{host.name} is not this computer: SSH hosts come with the host store")
        return LocalTransport(self.paths, python=host.python or None, host=host.name)

    def price_per_hour(self, host: HostProfile, instance_type: str | None) -> float | None:
        return None  # the price book (issue 5) fills this in
