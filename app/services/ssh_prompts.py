"""Questions the SSH layer must ask a person, behind one small interface.

The CLI answers on the terminal (app/cli/prompts.py); the GUI plugs in dialogs.
Answers are never stored by the services: an accepted host key goes to the
app's known_hosts file, a passphrase only unlocks a key in memory.

The methods may be called from worker threads (several hosts connect at once);
an implementation that talks to a person must serialise its questions.
"""
from __future__ import annotations

from typing import Protocol

# What ``offer_timm_install`` may answer: install from PyPI on the host, or unpack the wheel the app carries.
TIMM_FROM_PYPI = "pypi"
TIMM_FROM_WHEEL = "wheel"


class SshPrompts(Protocol):
    def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        """A host shows a key we have never seen: trust it?  ``fingerprint`` is ``SHA256:...``."""
        ...

    def ask_passphrase(self, key_path: str) -> str | None:
        """The passphrase of an encrypted private key, or None to skip that key."""
        ...

    def offer_timm_install(self, host: str, python: str, choices: tuple[str, ...]) -> str | None:
        """timm is missing for ``python`` on ``host``: one of ``choices`` (TIMM_FROM_*), or None to leave it."""
        ...


class NoPrompts:
    """Nobody to ask (scripts, tests): unknown host keys and encrypted keys are refused, nothing installed."""

    def __init__(self, accept_new_host_keys: bool = False, timm: str | None = None) -> None:
        self.accept_new_host_keys = accept_new_host_keys
        self.timm = timm

    def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        return self.accept_new_host_keys

    def ask_passphrase(self, key_path: str) -> str | None:
        return None

    def offer_timm_install(self, host: str, python: str, choices: tuple[str, ...]) -> str | None:
        return self.timm if self.timm in choices else None
