"""Turning ``--host NAME`` into a Transport."""
from __future__ import annotations

from app.core.errors import BadSpecError
from app.core.hosts import LOCAL_HOST
from app.paths import AppPaths
from app.services.transport import LocalTransport, Transport


def transport_for(name: str, paths: AppPaths) -> Transport:
    if name == LOCAL_HOST:
        return LocalTransport(paths)
    raise BadSpecError(f"unknown host {name!r}: the hosts known are: {LOCAL_HOST}")
