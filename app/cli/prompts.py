"""The SSH layer's questions, asked on the terminal (stderr + stdin, so ``--json`` output stays clean).

Without a terminal nothing is asked: unknown host keys are refused unless
``--accept-new-host-key`` was given, encrypted keys are skipped, timm is not
installed.  Several hosts may connect at once: one question at a time.
"""
from __future__ import annotations

import getpass
import sys
import threading

from app.services.ssh_prompts import TIMM_FROM_PYPI, TIMM_FROM_WHEEL

_ASK_LOCK = threading.Lock()
_TIMM_CHOICES = {TIMM_FROM_PYPI: "pip-install timm on the host (needs internet there)",
                 TIMM_FROM_WHEEL: "upload the timm wheel this app carries (no internet needed)"}


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
    def __init__(self, accept_new_host_key: bool = False, install_timm: str | None = None) -> None:
        self.accept_new_host_key = accept_new_host_key
        self.install_timm = install_timm

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

    def offer_timm_install(self, host: str, python: str, choices: tuple[str, ...]) -> str | None:
        if self.install_timm is not None:
            return self.install_timm if self.install_timm in choices else None
        if not _interactive():
            sys.stderr.write(f"[{host}] timm is missing for {python}; install it with "
                             f"`neuronbench hosts test {host} --install-timm {'|'.join(choices)}`\n")
            return None
        with _ASK_LOCK:
            sys.stderr.write(f"[{host}] timm is missing for {python}. Install it for NeuronBench's agent "
                             f"(into ~/.cache/neuronbench/site, nothing else changes)?\n")
            for number, choice in enumerate(choices, 1):
                sys.stderr.write(f"  {number}) {_TIMM_CHOICES[choice]}\n")
            answer = _ask(f"Choose 1-{len(choices)}, or press Enter to leave it: ")
            if answer.isdigit() and 1 <= int(answer) <= len(choices):
                return choices[int(answer) - 1]
            return None
