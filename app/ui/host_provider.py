"""Where the hosts sidebar gets its hosts, a transport for each, and what each costs per hour.

``StoreHostProvider`` is the app's: the saved profiles (``hosts.json``, the
same file ``neuronbench hosts`` edits), SSH transports that ask their questions
through the app's dialogs, and prices from the price book.  Tests plug in other
providers (replayed hosts); the sidebar and the run button only talk to this
interface.
"""
from __future__ import annotations

from typing import Protocol

from app.core.errors import NeuronBenchError
from app.core.hosts import LOCAL, HostProfile
from app.core.pricebook import Price, PriceBook
from app.paths import AppPaths
from app.services import host_access
from app.services.ec2.lease import Ec2RunOptions
from app.services.hosts_store import HostsStore
from app.services.pricing import load_pricebook
from app.services.ssh_prompts import NoPrompts, SshPrompts
from app.services.transport import LocalTransport, Transport


class HostProvider(Protocol):
    def hosts(self) -> list[HostProfile]:
        """Every host, "This computer" (``LOCAL``) first."""
        ...

    def transport_for(self, host: HostProfile, ec2_options: Ec2RunOptions | None = None) -> Transport:
        """A new transport to ``host`` (connecting happens in ``start``, on a worker thread).

        An --ec2 host needs ``ec2_options`` (the run's dead-man switch): it is launched on first use.
        """
        ...

    def price(self, host: HostProfile, instance_type: str | None, region: str | None = None) -> Price | None:
        """The on-demand price per hour with its source, or None when there is no price book."""
        ...


class LocalHostProvider:
    """This computer only, reached without SSH."""

    def __init__(self, paths: AppPaths) -> None:
        self.paths = paths

    def hosts(self) -> list[HostProfile]:
        return [LOCAL]

    def transport_for(self, host: HostProfile, ec2_options: Ec2RunOptions | None = None) -> Transport:
        if not host.local:
            raise ValueError(f"{host.name} is not this computer")
        return LocalTransport(self.paths, python=host.python or None, host=host.name)

    def price(self, host: HostProfile, instance_type: str | None, region: str | None = None) -> Price | None:
        return None


class StoreHostProvider:
    """The saved hosts, reached over SSH with the app's dialogs answering the SSH layer's questions."""

    def __init__(self, paths: AppPaths, prompts: SshPrompts | None = None) -> None:
        self.paths = paths
        self.store = HostsStore(paths.config)
        self.prompts = prompts or NoPrompts()
        self._book: PriceBook | None = None
        self.book_problem = ""

    def hosts(self) -> list[HostProfile]:
        return self.store.list()

    def transport_for(self, host: HostProfile, ec2_options: Ec2RunOptions | None = None) -> Transport:
        return host_access.transport_for_profile(host, self.paths, self.prompts, self.store,
                                                 ec2_options=ec2_options)

    def book(self) -> PriceBook | None:
        """The price book, read once (a damaged user price file leaves prices out, and says why)."""
        if self._book is None and not self.book_problem:
            try:
                self._book = load_pricebook(self.paths)
            except NeuronBenchError as exc:
                self.book_problem = str(exc)
        return self._book

    def reload_prices(self) -> None:
        """Read the price book again (after a price override)."""
        self._book, self.book_problem = None, ""

    def price(self, host: HostProfile, instance_type: str | None, region: str | None = None) -> Price | None:
        book = self.book()
        if book is None or not instance_type:
            return None
        return book.price(instance_type, host.region or region)
