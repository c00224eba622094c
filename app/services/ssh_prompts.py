"""Questions the SSH layer must ask a person, behind one small interface.

The CLI answers on the terminal (app/cli/prompts.py); the GUI plugs in dialogs.
Answers are never stored by the services: an accepted host key goes to the
app's known_hosts file, a passphrase only unlocks a key in memory.

The methods may be called from worker threads (several hosts connect at once);
an implementation that talks to a person must serialise its questions.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

# What ``offer_install`` may answer: pip-install on the host from PyPI, or unpack a wheel the app carries.
FROM_PYPI = "pypi"
FROM_WHEEL = "wheel"
# The names these had when timm was the only library offered (``hosts test --install-timm pypi|wheel``).
TIMM_FROM_PYPI = FROM_PYPI
TIMM_FROM_WHEEL = FROM_WHEEL


@dataclass(frozen=True)
class InstallOffer:
    """A library a run needs is missing for the host's Python: what would be installed, and the ways to do it."""

    host: str
    python: str
    library: str                # timm, torchvision, transformers or optimum-neuron
    choices: tuple[str, ...]    # FROM_PYPI and/or FROM_WHEEL, the default first
    needed_by: str              # the models that need it, e.g. "hf: models"
    what: str                   # one sentence: what goes where, and what the host needs for it (internet)


class SshPrompts(Protocol):
    def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        """A host shows a key we have never seen: trust it?  ``fingerprint`` is ``SHA256:...``."""
        ...

    def ask_passphrase(self, key_path: str) -> str | None:
        """The passphrase of an encrypted private key, or None to skip that key."""
        ...

    def offer_install(self, offer: InstallOffer) -> str | None:
        """A model library is missing on a host: one of ``offer.choices``, or None to leave it."""
        ...


class NoPrompts:
    """Nobody to ask (scripts, tests): unknown host keys and encrypted keys are refused.

    ``install`` answers the install offers in advance (library -> FROM_*); ``timm`` is
    ``install={"timm": timm}``.  A library not named there is not installed.
    """

    def __init__(self, accept_new_host_keys: bool = False, timm: str | None = None,
                 install: Mapping[str, str] | None = None) -> None:
        self.accept_new_host_keys = accept_new_host_keys
        self.install = dict(install or {})
        if timm is not None:
            self.install["timm"] = timm

    def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        return self.accept_new_host_keys

    def ask_passphrase(self, key_path: str) -> str | None:
        return None

    def offer_install(self, offer: InstallOffer) -> str | None:
        how = self.install.get(offer.library)
        return how if how in offer.choices else None
