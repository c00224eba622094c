"""Turning ``--host NAME`` into a Transport: ``local`` and ``--local`` profiles run here, the rest over SSH."""
from __future__ import annotations

import argparse
import sys

from app.cli.prompts import TerminalPrompts
from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services import host_access
from app.services.ec2.lease import Ec2RunOptions
from app.services.hosts_store import HostsStore
from app.services.ssh_prompts import FROM_PYPI, SshPrompts
from app.services.transport import Transport


def prompts_for(args: argparse.Namespace) -> TerminalPrompts:
    install = {name: FROM_PYPI for name in getattr(args, "install", None) or ()}
    if getattr(args, "install_timm", None):
        install["timm"] = args.install_timm
    return TerminalPrompts(accept_new_host_key=getattr(args, "accept_new_host_key", False), install=install)


def _say(host: str):
    def say(text: str) -> None:
        sys.stderr.write(f"[{host}] {text}\n")
        sys.stderr.flush()

    return say


def transport_for_profile(profile: HostProfile, paths: AppPaths, prompts: SshPrompts | None = None,
                          store: HostsStore | None = None, ec2_options: Ec2RunOptions | None = None) -> Transport:
    """The host's transport, asking on the terminal and reporting its progress on stderr."""
    return host_access.transport_for_profile(profile, paths, prompts or TerminalPrompts(), store,
                                             on_progress=_say(profile.name), ec2_options=ec2_options)


def transport_for(name: str, paths: AppPaths, prompts: SshPrompts | None = None) -> Transport:
    """The transport for a host name; an unknown name raises BadSpecError listing the known ones."""
    store = HostsStore(paths.config)
    return transport_for_profile(store.get(name), paths, prompts, store)
