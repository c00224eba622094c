"""A second machine on this one: a network namespace of the test's own, joined to this one by a veth pair.

Inside it, 127.0.0.1 is its own loopback: an address this computer's processes listen on
there is unreachable from the namespace, as a private address of one machine is from another.
Root only (``ip netns``); the tests that need it skip otherwise.  Traffic goes only into
namespaces the test creates.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass


def netns_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the `ip` tool (iproute2) is not installed"
    return None


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


@dataclass
class Namespace:
    name: str
    host_address: str  # this computer's end of the veth pair
    address: str       # the namespace's end

    @classmethod
    def create(cls) -> Namespace:
        tag = uuid.uuid4().hex[:6]
        # A subnet of its own: two namespaces alive at once (or one a crashed test left) never share a route.
        subnet = 64 + int(tag, 16) % 180
        ns = cls(f"nb-{tag}", f"10.{subnet}.{int(tag[:2], 16)}.1", f"10.{subnet}.{int(tag[:2], 16)}.2")
        outside, inside = f"nbo-{tag}", f"nbi-{tag}"
        _ip("netns", "add", ns.name)
        _ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        _ip("link", "set", inside, "netns", ns.name)
        _ip("addr", "add", f"{ns.host_address}/24", "dev", outside)
        _ip("link", "set", outside, "up")
        _ip("netns", "exec", ns.name, "ip", "addr", "add", f"{ns.address}/24", "dev", inside)
        _ip("netns", "exec", ns.name, "ip", "link", "set", inside, "up")
        _ip("netns", "exec", ns.name, "ip", "link", "set", "lo", "up")
        ns._outside = outside
        return ns

    def delete(self) -> None:
        subprocess.run(["ip", "netns", "delete", self.name], capture_output=True)
        subprocess.run(["ip", "link", "delete", getattr(self, "_outside", "")], capture_output=True)
