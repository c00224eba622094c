"""Loopback only: connect() through pytest-socket's allow-list, and no name lookups that would leave this machine.

pytest-socket's allow-list guards ``connect()``; a DNS lookup of a made-up public
name (``ec2-54-1-2-3.compute-1.amazonaws.com``) would still send a query to the
resolver, so ``getaddrinfo`` is limited to loopback literals and ``localhost`` too.
"""
from __future__ import annotations

import ipaddress
import socket

import pytest_socket

_real_getaddrinfo = socket.getaddrinfo


class LookupBlockedError(pytest_socket.SocketBlockedError):
    def __init__(self, host) -> None:
        RuntimeError.__init__(self, f"A test tried to look up {host!r}: names are not looked up (network guard)")


def _needs_no_query(host) -> bool:
    """An address literal (connect() then decides) or localhost: nothing goes to a DNS server."""
    if host is None or host in ("localhost", b"localhost", ""):
        return True
    try:
        ipaddress.ip_address(host.decode() if isinstance(host, bytes) else host)
    except ValueError:
        return False
    return True


def _guarded_getaddrinfo(host, *args, **kwargs):
    if not _needs_no_query(host):
        raise LookupBlockedError(host)
    return _real_getaddrinfo(host, *args, **kwargs)


def install(allowed: list[str]) -> None:
    pytest_socket.socket_allow_hosts(allowed, allow_unix_socket=True)
    socket.getaddrinfo = _guarded_getaddrinfo


def remove() -> None:
    pytest_socket._remove_restrictions()
    socket.getaddrinfo = _real_getaddrinfo
