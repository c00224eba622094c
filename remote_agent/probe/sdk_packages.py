"""Versions of the Neuron SDK's system packages, read from the dpkg database.

neuron-ls reports the runtime version only for running processes, so an idle
host would otherwise show none.  Reading dpkg's status file needs no subprocess
and no root.  (RPM-based hosts keep a binary database: there this returns None.)
"""
from __future__ import annotations

from typing import Optional

DPKG_STATUS = "/var/lib/dpkg/status"


def dpkg_version(package: str, status_path: Optional[str] = None) -> Optional[str]:
    """The installed version of a Debian package, without its build suffix.

    Args:
        package: e.g. ``aws-neuronx-runtime-lib``.
        status_path: the dpkg status file; `DPKG_STATUS` when None.

    Returns:
        e.g. ``"2.23.112.0"`` for ``2.23.112.0-9b5179492``, or None when it is not installed
        or the database is unreadable.
    """
    try:
        with open(status_path or DPKG_STATUS, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    except OSError:
        return None
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.splitlines():
            key, sep, value = line.partition(":")
            if sep and not line[:1].isspace():
                fields[key.strip()] = value.strip()
        if fields.get("Package") == package and "installed" in fields.get("Status", "").split():
            version = fields.get("Version", "")
            return version.split(":", 1)[-1].split("-", 1)[0] or None
    return None
