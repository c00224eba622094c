"""Reaching a launched instance over SSH: by its id through ~/.ssh/config, its host key checked on its console.

AWS users reach instances with ``Host i-*`` blocks in ``~/.ssh/config`` (often a
``ProxyCommand`` through Session Manager, or a HostName rule).  Such a block wins;
only when none matches is the instance reached at its public DNS name or address.
Its host key is filed under the instance id, and trusted when it matches a
fingerprint the instance printed on its console (which only the account sees).
"""
from __future__ import annotations

import fnmatch
import getpass
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import paramiko

from app.core.ec2_boot import console_fingerprints, key_family
from app.core.ec2_launch import LOGIN_USER
from app.core.errors import CloudError, HostKeyError
from app.core.hosts import SSH_PORT, HostProfile, parse_jump_list
from app.services.ec2.instances import LaunchedInstance
from app.services.ssh_connect import Endpoint
from app.services.ssh_prompts import InstallOffer, SshPrompts

SSH_CONFIG = "~/.ssh/config"


def ssh_config_entry(instance_id: str, path: str = SSH_CONFIG) -> dict[str, Any] | None:
    """The ssh_config settings for ``instance_id`` when a ``Host`` block names it (``Host *`` alone does not)."""
    full = os.path.expanduser(path)
    if not os.path.isfile(full):
        return None
    try:
        config = paramiko.SSHConfig.from_path(full)
    except Exception as exc:  # paramiko's parser raises plain exceptions on bad lines
        raise CloudError(f"cannot read {path} to reach {instance_id}: {exc}") from None
    patterns = [p for p in config.get_hostnames() if p != "*" and not p.startswith("!")]
    if not any(fnmatch.fnmatchcase(instance_id, p) for p in patterns):
        return None
    return dict(config.lookup(instance_id))


def instance_endpoints(profile: HostProfile, instance: LaunchedInstance,
                       config_path: str = SSH_CONFIG) -> list[Endpoint]:
    """The SSH hops to ``instance``: through its ssh_config block, else straight to its public address."""
    label = f"{profile.name} ({instance.instance_id})"
    entry = ssh_config_entry(instance.instance_id, config_path)
    if entry is None:
        address = instance.public_ip or instance.public_dns  # the address itself: no DNS lookup needed
        if not address:
            raise CloudError(f"instance {instance.instance_id} has no public address and {config_path} has no "
                             f"`Host i-*` block to reach it by: launch it in a public subnet (--subnet), or add a "
                             f"block (e.g. a ProxyCommand through Session Manager)")
        return [Endpoint(label, address, SSH_PORT, profile.user or LOGIN_USER, profile.identity_file,
                         host_key_alias=instance.instance_id)]
    identities = entry.get("identityfile") or []
    chain = [Endpoint(f"jump host {hop.host}", hop.host, hop.port, hop.user or getpass.getuser())
             for hop in parse_jump_list(entry.get("proxyjump", ""))]
    chain.append(Endpoint(label, entry.get("hostname", instance.instance_id), int(entry.get("port", SSH_PORT)),
                          profile.user or entry.get("user") or LOGIN_USER,
                          profile.identity_file or (identities[0] if identities else ""),
                          proxy_command="" if chain else entry.get("proxycommand", ""),
                          host_key_alias=instance.instance_id))
    return chain


class ConsoleCheckedPrompts:
    """SSH questions for a launched instance: its new host key is checked against its console output.

    A key listed there is trusted without asking; a key that differs is refused
    (it is not the instance's); while the console shows no fingerprints (cloud-init
    prints them a minute or two after boot), it is read again until ``wait_s``
    passes, and then the question goes to the person as for any new host.
    Passphrase and install questions always go to the person.
    """

    def __init__(self, inner: SshPrompts, instance_id: str, read_console: Callable[[], str],
                 wait_s: float = 240.0, poll_s: float = 5.0) -> None:
        self.inner = inner
        self.instance_id = instance_id
        self.read_console = read_console
        self.wait_s = wait_s
        self.poll_s = poll_s
        self.verified: str | None = None  # the fingerprint matched on the console
        self._lock = threading.Lock()

    def confirm_host_key(self, host: str, key_type: str, fingerprint: str) -> bool:
        with self._lock:
            deadline = time.monotonic() + self.wait_s
            printed = console_fingerprints(self.read_console())
            while not printed and time.monotonic() < deadline:
                time.sleep(self.poll_s)
                printed = console_fingerprints(self.read_console())
        if not printed:
            return self.inner.confirm_host_key(
                f"{host}; its console shows no host key fingerprints to check against", key_type, fingerprint)
        family = key_family(key_type)
        if fingerprint in printed.get(family, set()):
            self.verified = fingerprint
            return True
        shown = ", ".join(f"{name} {' '.join(sorted(prints))}" for name, prints in sorted(printed.items()))
        raise HostKeyError(
            f"the host key of {host} is not one that instance {self.instance_id} printed on its console: it shows "
            f"{key_type} {fingerprint}, the console lists {shown}; this can be an attack, so nothing was sent and "
            f"the instance is terminated", changed=True)

    def ask_passphrase(self, key_path: str) -> str | None:
        return self.inner.ask_passphrase(key_path)

    def offer_install(self, offer: InstallOffer) -> str | None:
        return self.inner.offer_install(offer)
