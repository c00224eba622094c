"""Reaching a saved host: its transport, a connection check, and profiles from ``~/.ssh/config``.

Shared by the CLI (``hosts test``, ``run --host``) and the desktop app (test
connection, the run button, import): one place decides that ``local`` and
``--local`` profiles run here and the rest go over SSH.
"""
from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import paramiko

from app.core.errors import BadSpecError
from app.core.hosts import SSH_PORT, HostProfile
from app.paths import AppPaths
from app.services.deploy import MODEL_LIBRARIES
from app.services.ec2.lease import Ec2RunOptions, Ec2Transport
from app.services.host_libraries import missing_sentence
from app.services.hosts_store import HostsStore
from app.services.session import probe_host
from app.services.ssh_prompts import NoPrompts, SshPrompts
from app.services.ssh_transport import SshTransport
from app.services.transport import LocalTransport, Transport

Say = Callable[[str], None]


def transport_for_profile(profile: HostProfile, paths: AppPaths, prompts: SshPrompts | None = None,
                          store: HostsStore | None = None, on_progress: Say | None = None,
                          ec2_options: Ec2RunOptions | None = None) -> Transport:
    """A new (not yet connected) transport to ``profile``; jump hosts may name other saved profiles.

    An ``--ec2`` profile's transport launches its instance on first use and terminates it on ``release()``;
    ``ec2_options`` (the run's dead-man switch, --keep) are needed for it.
    """
    if profile.local:
        return LocalTransport(paths, python=profile.python or None, host=profile.name)
    if profile.ec2 is not None:
        if ec2_options is None:
            raise BadSpecError(f"host {profile.name} is launched on EC2 for a run: use it with `neuronbench run`")
        return Ec2Transport(profile, paths, ec2_options, prompts or NoPrompts(), on_progress=on_progress)
    profiles = {p.name: p for p in (store or HostsStore(paths.config)).list()}
    return SshTransport(profile, paths, prompts or NoPrompts(), profiles=profiles, on_progress=on_progress)


def check_host(transport: Transport, profile: HostProfile, say: Say) -> dict[str, Any]:
    """Connect, prepare the host (Python, agent, model libraries) and probe it: what ``hosts test`` reports.

    Every model library the host's Python lacks is offered (a run offers only what its model needs).

    ``say`` hears each step as a sentence; a failure raises the engine's error
    (ConnectError, AuthError, HostKeyError, DeployError) with its one sentence.
    """
    report: dict[str, Any] = {"host": profile.name, "address": profile.address}
    if isinstance(transport, SshTransport):
        started = time.monotonic()
        key = transport.connection().transport.get_remote_server_key()
        report["connect_s"] = round(time.monotonic() - started, 3)
        report["host_key"] = {"type": key.get_name(), "fingerprint": key.fingerprint}
        say(f"connected to {profile.address} in {report['connect_s']:.2f} s, host key {key.get_name()} "
            f"{key.fingerprint}")
        setup = transport.setup(fresh=True, libraries=MODEL_LIBRARIES)
        report.update(python=setup.python, python_version=setup.python_version, agent=setup.agent_path,
                      agent_uploaded=setup.uploaded, agent_uploaded_via=setup.upload_via or None, timm=setup.timm,
                      torch=setup.torch or None, missing_libraries=list(setup.missing))
        say(f"Python {setup.python_version} at {setup.python}")
        say(f"agent uploaded to {setup.agent_path} over {setup.upload_via}" if setup.uploaded
            else f"agent already at {setup.agent_path}")
        for library in setup.missing:
            say(missing_sentence(setup, profile.name, library, transport.paths.cache / "wheels"))
    report["env"] = probe_host(transport, quick=True)
    return report


def profiles_from_ssh_config(path: str) -> tuple[list[HostProfile], list[str]]:
    """Profiles for the concrete ``Host`` aliases of an OpenSSH config (wildcards only feed the lookups)."""
    try:
        config = paramiko.SSHConfig.from_path(os.path.expanduser(path))
    except FileNotFoundError:
        raise BadSpecError(f"no SSH config at {path}; give its path with --config F") from None
    except Exception as exc:  # paramiko's parser raises plain exceptions on bad lines
        raise BadSpecError(f"cannot read the SSH config {path}: {exc}") from None
    profiles, skipped = [], []
    for alias in sorted(config.get_hostnames()):
        if any(ch in alias for ch in "*?!"):
            continue
        entry = config.lookup(alias)
        if entry.get("proxycommand"):
            skipped.append(f"{alias}: it uses ProxyCommand, which NeuronBench does not run (use ProxyJump)")
            continue
        try:
            profiles.append(HostProfile(name=alias, hostname=entry.get("hostname", alias),
                                        port=int(entry.get("port", SSH_PORT)), user=entry.get("user", ""),
                                        identity_file=(entry.get("identityfile") or [""])[0],
                                        proxy_jump=entry.get("proxyjump", "")))
        except (BadSpecError, ValueError) as exc:
            skipped.append(f"{alias}: {exc}")
    return profiles, skipped


def import_ssh_config(store: HostsStore, path: str) -> tuple[list[HostProfile], list[str]]:
    """Save the config's hosts that are not saved yet: (added, skipped with reasons)."""
    profiles, skipped = profiles_from_ssh_config(path)
    existing = set(store.names())
    added = []
    for profile in profiles:
        if profile.name in existing:
            skipped.append(f"{profile.name}: a host of that name exists already")
            continue
        store.add(profile)
        added.append(profile)
    return added, skipped
