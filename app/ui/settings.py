"""What the app remembers between sessions (QSettings): layout, the last workload, the ticked hosts.

Runs left going on their hosts are not kept here: the run store knows them (status ``unfinished``).

Values are stored as JSON text so an INI file round-trips them exactly (QSettings'
INI backend otherwise turns numbers and lists into strings).  Tests pass their
own ``QSettings(path, IniFormat)``, so they never touch the user's file.
"""
from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QByteArray, QSettings

ORGANIZATION = "NeuronBench"
APPLICATION = "NeuronBench"


def user_settings() -> QSettings:
    """The user's settings file (``~/.config/NeuronBench/NeuronBench.conf`` on Linux)."""
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORGANIZATION, APPLICATION)


class AppSettings:
    def __init__(self, store: QSettings) -> None:
        self.store = store

    # ------------------------------------------------------------ plumbing
    def _get_json(self, key: str, default: Any) -> Any:
        raw = self.store.value(key)
        if raw is None:
            return default
        try:
            return json.loads(str(raw))
        except ValueError:
            return default  # a hand-edited or older file: fall back rather than fail to start

    def _set_json(self, key: str, value: Any) -> None:
        self.store.setValue(key, json.dumps(value))

    def _get_bytes(self, key: str) -> QByteArray | None:
        raw = self.store.value(key)
        return raw if isinstance(raw, QByteArray) and not raw.isEmpty() else None

    def sync(self) -> None:
        self.store.sync()

    # ------------------------------------------------------------ layout
    def geometry(self, name: str) -> QByteArray | None:
        return self._get_bytes(f"layout/{name}")

    def set_geometry(self, name: str, state: QByteArray) -> None:
        self.store.setValue(f"layout/{name}", state)

    # ------------------------------------------------------------ workload and hosts
    def workload(self) -> dict[str, Any] | None:
        value = self._get_json("workload/last", None)
        return value if isinstance(value, dict) else None

    def set_workload(self, form: dict[str, Any]) -> None:
        self._set_json("workload/last", form)

    def checked_hosts(self) -> list[str] | None:
        value = self._get_json("hosts/checked", None)
        return [str(v) for v in value] if isinstance(value, list) else None

    def set_checked_hosts(self, names: list[str]) -> None:
        self._set_json("hosts/checked", names)
