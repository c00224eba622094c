"""Host keys, checked like OpenSSH's ``StrictHostKeyChecking=ask``.

Two files are read: the user's ``~/.ssh/known_hosts`` (never written) and the
app's own ``<config>/known_hosts`` (where keys the user accepts are saved).  A
key never seen before is trusted only after a person confirms its SHA256
fingerprint; a key that differs from the one on file is always refused.
"""
from __future__ import annotations

import fnmatch
import os
import shlex
import threading
from dataclasses import dataclass
from pathlib import Path

import paramiko
from paramiko.hostkeys import HostKeyEntry

from app.core.errors import HostKeyError
from app.core.hosts import SSH_PORT
from app.services.ssh_prompts import SshPrompts

_SAVE_LOCK = threading.Lock()


def known_hosts_name(hostname: str, port: int) -> str:
    """The name a known_hosts line uses: ``host``, or ``[host]:port`` off port 22."""
    return hostname if port == SSH_PORT else f"[{hostname}]:{port}"


def fingerprint(key: paramiko.PKey) -> str:
    """``SHA256:...``: the form ``ssh-keygen -lf`` and OpenSSH's prompts show."""
    return key.fingerprint


@dataclass(frozen=True)
class KnownKey:
    key: paramiko.PKey
    source: Path


def _read_entries(path: Path) -> list[HostKeyEntry]:
    """Parse a known_hosts file line by line, skipping lines paramiko cannot read.

    ``@cert-authority``/``@revoked`` markers and key types paramiko lacks
    (``sk-*``) are skipped rather than making the whole file unreadable.
    """
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith(("#", "@")):
            continue
        try:
            entry = HostKeyEntry.from_line(line)
        except Exception:  # InvalidHostKey, unknown key types, bad base64: not our business here
            continue
        if entry is not None:
            entries.append(entry)
    return entries


class KnownHosts:
    """The host keys we trust, and the rule for keys we do not know yet."""

    def __init__(self, app_file: Path, user_file: Path | None = None) -> None:
        self.app_file = Path(app_file)
        self.user_file = Path(user_file) if user_file else Path(os.path.expanduser("~/.ssh/known_hosts"))

    def lookup(self, hostname: str, port: int) -> list[KnownKey]:
        """Keys on file for this host and port, from both files (user's first)."""
        name = known_hosts_name(hostname, port)
        found = []
        for path in (self.user_file, self.app_file):
            for entry in _read_entries(path):
                if any(_matches(pattern, name) for pattern in entry.hostnames):
                    found.append(KnownKey(entry.key, path))
        return found

    def preferred_key_types(self, hostname: str, port: int) -> list[str]:
        """Key types we hold for the host, so the server is asked for one we can check (as ssh does)."""
        types = []
        for known in self.lookup(hostname, port):
            name = known.key.get_name()
            if name == "ssh-rsa":
                types += ["rsa-sha2-512", "rsa-sha2-256"]
            elif name not in types:
                types.append(name)
        return types

    def verify(self, host_label: str, hostname: str, port: int, key: paramiko.PKey, prompts: SshPrompts) -> None:
        """Accept a known key, ask about a new one, refuse a changed one (raises HostKeyError)."""
        name = known_hosts_name(hostname, port)
        same_type = [k for k in self.lookup(hostname, port) if k.key.get_name() == key.get_name()]
        if any(k.key == key for k in same_type):
            return
        if same_type:
            old = same_type[0]
            remove = f"ssh-keygen -R {shlex.quote(name)}"
            if old.source != self.user_file:
                remove += f" -f {shlex.quote(str(old.source))}"
            raise HostKeyError(
                f"the host key of {host_label} ({name}) has CHANGED: {old.source} holds {key.get_name()} "
                f"{fingerprint(old.key)} but the host now shows {fingerprint(key)}; this can be an attack, "
                f"so nothing was sent; if the host was rebuilt, remove the old key with `{remove}` and connect again",
                changed=True)
        if not prompts.confirm_host_key(f"{host_label} ({name})", key.get_name(), fingerprint(key)):
            raise HostKeyError(
                f"the host key of {host_label} ({name}) is not known yet: {key.get_name()} {fingerprint(key)}; "
                f"if that fingerprint is the host's, accept it when asked (on a terminal answer yes, or pass "
                f"--accept-new-host-key) and connect again")
        self.save(name, key)

    def save(self, name: str, key: paramiko.PKey) -> None:
        """Append an accepted key to the app's known_hosts (0600; the user's file is never written)."""
        with _SAVE_LOCK:
            self.app_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self.app_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with os.fdopen(fd, "a", encoding="utf-8") as handle:
                handle.write(f"{name} {key.get_name()} {key.get_base64()}\n")


def _matches(pattern: str, name: str) -> bool:
    """One known_hosts host pattern (plain, hashed ``|1|``, or a ``*``/``?`` wildcard) against ``name``."""
    if pattern.startswith("|1|"):
        return paramiko.HostKeys.hash_host(name, pattern) == pattern
    if "*" in pattern or "?" in pattern:
        return not pattern.startswith("!") and fnmatch.fnmatchcase(name, pattern)
    return pattern == name
