"""The SSH layer's questions, asked on the terminal (stderr + stdin, so ``--json`` output stays clean).

Without a terminal nothing is asked: unknown host keys are refused unless
``--accept-new-host-key`` was given, encrypted keys are skipped, and a missing
model library is installed only when ``--install``/``--install-timm`` named it.
Several hosts may connect at once: one question at a time.
"""
from __future__ import annotations

import getpass
import sys
import threading
from collections.abc import Mapping

from app.services.ssh_prompts import FROM_PYPI, FROM_WHEEL, InstallOffer

_ASK_LOCK = threading.Lock()
_INSTALL_CHOICES = {FROM_PYPI: "pip-install {library} on the host (needs internet there)",
                    FROM_WHEEL: "upload the {library} wheel this app carries (no internet needed)"}


def _interactive() -> bool:
    return sys.stdin is not None and sys.stdin.isatty() and sys.stderr.isatty()


def interactive() -> bool:
    """Whether a person can answer a question on this terminal."""
    return _interactive()


def ask_yes_no(question: str) -> bool:
    """Ask on the terminal; only "y" or "yes" means yes."""
    with _ASK_LOCK:
        return _ask(question) in ("y", "yes")


def _ask(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower()


class TerminalPrompts:
    def __init__(self, accept_new_host_key: bool = False, install: Mapping[str, str] | None = None) -> None:
        self.accept_new_host_key = accept_new_host_key
        self.install = dict(install or {})  # library -> FROM_*, answered without asking (hosts test --install)

    def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        if self.accept_new_host_key:
            sys.stderr.write(f"[{host}] trusting its new host key {key_type} {fingerprint} (--accept-new-host-key)\n")
            return True
        if not _interactive():
            return False
        with _ASK_LOCK:
            sys.stderr.write(f"The authenticity of host {host} can't be established.\n"
                             f"{key_type} key fingerprint is {fingerprint}.\n")
            while True:
                answer = _ask("Are you sure you want to continue connecting (yes/no)? ")
                if answer in ("yes", "no"):
                    return answer == "yes"
                sys.stderr.write("Please type 'yes' or 'no'.\n")

    def ask_passphrase(self, key_path: str) -> str | None:
        if not _interactive():
            return None
        with _ASK_LOCK:
            return getpass.getpass(f"Enter passphrase for key '{key_path}': ", stream=sys.stderr) or None

    def offer_install(self, offer: InstallOffer) -> str | None:
        if offer.library in self.install:
            return self.install[offer.library] if self.install[offer.library] in offer.choices else None
        if not _interactive():
            return None  # the caller says what is missing and the command that installs it
        with _ASK_LOCK:
            sys.stderr.write(f"[{offer.host}] {offer.library} is missing for {offer.python}, and {offer.needed_by} "
                             f"need it. Install it for NeuronBench's agent? {offer.what}.\n")
            for number, choice in enumerate(offer.choices, 1):
                sys.stderr.write(f"  {number}) {_INSTALL_CHOICES[choice].format(library=offer.library)}\n")
            answer = _ask(f"Choose 1-{len(offer.choices)}, or press Enter to leave it: ")
            if answer.isdigit() and 1 <= int(answer) <= len(offer.choices):
                return offer.choices[int(answer) - 1]
            return None
