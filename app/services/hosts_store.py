"""The saved host profiles: ``<config dir>/hosts.json``.

One small JSON file, rewritten whole through a temporary file and a rename, so a
crash never leaves half a file.  ``local`` is built in: always listed first,
never saved, never removable.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from app.core.errors import BadSpecError
from app.core.hosts import LOCAL, LOCAL_HOST, HostProfile
from app.core.quoting import quoted

SCHEMA = "neuronbench.hosts/1"
_PLAIN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,99}$")


class HostsStore:
    """Read and change the saved host profiles."""

    def __init__(self, config_dir: Path) -> None:
        self.path = Path(config_dir) / "hosts.json"

    def _load(self) -> list[HostProfile]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        try:
            data = json.loads(text)
            if data.get("schema") != SCHEMA:
                raise ValueError(f"schema {data.get('schema')!r}, expected {SCHEMA}")
            return [HostProfile.from_dict(entry) for entry in data["hosts"]]
        except (ValueError, KeyError, TypeError, AttributeError, BadSpecError) as exc:
            raise BadSpecError(f"the hosts file {self.path} is damaged ({exc}); fix or remove it") from None

    def _save(self, profiles: list[HostProfile]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = {"schema": SCHEMA, "hosts": [p.to_dict() for p in profiles]}
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".hosts-", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.replace(tmp, self.path)

    def list(self) -> list[HostProfile]:
        """Every host, ``local`` first, then the saved ones in the order they were added."""
        return [LOCAL, *self._load()]

    def names(self) -> list[str]:
        return [p.name for p in self.list()]

    def find(self, name: str) -> HostProfile | None:
        return next((p for p in self.list() if p.name == name), None)

    def get(self, name: str) -> HostProfile:
        profile = self.find(name)
        if profile is None:
            hint = name if _PLAIN_NAME.match(name) else "NAME"  # a command to copy, never one to repaint a terminal
            raise BadSpecError(f"unknown host {quoted(name)}: the hosts known are: {', '.join(self.names())} "
                               f"(add one with `neuronbench hosts add {hint} --hostname ADDRESS`)")
        return profile

    def add(self, profile: HostProfile, replace: bool = False) -> None:
        if profile.name == LOCAL_HOST:
            raise BadSpecError(f"{LOCAL_HOST!r} is built in (this computer); choose another name")
        saved = self._load()
        if any(p.name == profile.name for p in saved) and not replace:
            raise BadSpecError(f"a host named {profile.name!r} exists already; remove it first "
                               f"(`neuronbench hosts remove {profile.name}`) or choose another name")
        self._save([profile if p.name == profile.name else p for p in saved]
                   + ([] if any(p.name == profile.name for p in saved) else [profile]))

    def remove(self, name: str) -> None:
        if name == LOCAL_HOST:
            raise BadSpecError(f"{LOCAL_HOST!r} is built in (this computer) and cannot be removed")
        saved = self._load()
        if not any(p.name == name for p in saved):
            self.get(name)  # raises with the list of known names
        self._save([p for p in saved if p.name != name])
