"""Host profiles: the machines a benchmark runs on.  ``local`` (this computer) always exists.

A profile says how to reach a host (address, user, key file, jump hosts, the
Python to use) and what it is (declared instance type and region).  It never
holds a secret: keys stay in their files or in the ssh-agent, passphrases are
asked for when needed and kept in memory only.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from app.core.ec2_launch import Ec2Launch
from app.core.errors import BadSpecError
from app.core.quoting import has_surrogates, quoted
from app.core.slurm import SlurmSettings

LOCAL_HOST = "local"
SSH_PORT = 22
# Control characters, C1 controls and the invisible ones that reorder or hide text (bidirectional overrides,
# zero-width characters): a profile's fields are shown in sentences, tables and dialogs.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_WHITESPACE = re.compile(r"\s")
# The longest each field can sensibly be (a DNS name 253, a path 4096): a 100 kB value is a mistake.
_MAX_CHARS = {"hostname": 253, "user": 256, "identity_file": 4096, "proxy_jump": 2048, "python": 4096,
              "instance_type": 64, "region": 64}
# [user@]host[:port], one hop of a ProxyJump list (host may be an IPv6 literal in brackets).
_JUMP = re.compile(r"^(?:(?P<user>[^@\s]+)@)?(?P<host>\[[0-9A-Fa-f:.]+\]|[^@:\s\[\]]+)(?::(?P<port>\d{1,5}))?$")


def _help(text: str, flag: str = "") -> dict[str, str]:
    return {"help": text, "flag": flag}


@dataclass(frozen=True)
class JumpHop:
    """One hop of a ProxyJump list: ``[user@]host[:port]`` or the name of another profile."""

    host: str
    user: str = ""
    port: int = SSH_PORT


def parse_jump_list(text: str) -> list[JumpHop]:
    """Split an OpenSSH ProxyJump value (``a,user@b:2222``) into hops; ``none`` means no jump."""
    if not text or text.strip().lower() == "none":
        return []
    hops = []
    for part in text.split(","):
        match = _JUMP.match(part.strip())
        if match is None:
            raise BadSpecError(f"proxy_jump: {quoted(part.strip())} is not [user@]host[:port]")
        port = int(match["port"]) if match["port"] else SSH_PORT
        if not 1 <= port <= 65535:
            raise BadSpecError(f"proxy_jump: port {port} of {quoted(part.strip())} is not between 1 and 65535")
        hops.append(JumpHop(host=match["host"].strip("[]"), user=match["user"] or "", port=port))
    return hops


@dataclass(frozen=True)
class HostProfile:
    """How to reach a host and what it is.  Never holds a secret (keys stay in files or the ssh-agent)."""

    name: str = field(metadata=_help("the name you use for this host in --host", "NAME"))
    local: bool = field(default=False, metadata=_help(
        "this computer, reached without SSH (e.g. NeuronBench running on the instance itself)", "--local"))
    hostname: str = field(default="", metadata=_help("DNS name or IP address of the host", "--hostname"))
    port: int = field(default=SSH_PORT, metadata=_help("SSH port", "--port"))
    user: str = field(default="", metadata=_help("login user (default: your local user name)", "--user"))
    identity_file: str = field(default="", metadata=_help(
        "private key file (default: the ssh-agent's keys, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa)",
        "--identity"))
    proxy_jump: str = field(default="", metadata=_help(
        "jump host(s), as in OpenSSH's ProxyJump: [user@]host[:port], comma-separated, or a profile name",
        "--proxy-jump"))
    python: str = field(default="", metadata=_help(
        "Python on the host (default: the newest /opt/aws_neuronx_venv_pytorch_* venv, else python3)",
        "--python"))
    instance_type: str = field(default="", metadata=_help(
        "declared instance type, e.g. trn1.2xlarge (used for cost when EC2 metadata is not reachable)",
        "--instance-type"))
    region: str = field(default="", metadata=_help("declared AWS region, e.g. us-east-1", "--region"))
    ec2: Ec2Launch | None = field(default=None, metadata=_help(
        "launch an EC2 instance for each run and terminate it after (no --hostname: the instance is reached by "
        "its id through ~/.ssh/config, else its public address)", "--ec2"))
    slurm: SlurmSettings | None = field(default=None, metadata=_help(
        "the SSH login node of a Slurm cluster: runs are submitted with sbatch (run --nnodes N: one training on N "
        "nodes), srun starts the agent on every node, scancel stops them", "--slurm"))

    def __post_init__(self) -> None:
        if isinstance(self.ec2, dict):  # from JSON
            object.__setattr__(self, "ec2", Ec2Launch.from_dict(self.ec2))
        if isinstance(self.slurm, dict):
            object.__setattr__(self, "slurm", SlurmSettings.from_dict(self.slurm))
        self.validate()

    def validate(self) -> None:
        def need(ok: bool, message: str) -> None:
            if not ok:
                raise BadSpecError(message)

        need(isinstance(self.name, str) and 0 < len(self.name) <= 100, "a host name must be 1 to 100 characters")
        need(not _WHITESPACE.search(self.name) and not _CONTROL.search(self.name) and not self.name.startswith("-")
             and not has_surrogates(self.name),
             f"host name {quoted(self.name)} must not contain spaces or control characters, nor start with '-'")
        need(isinstance(self.port, int) and not isinstance(self.port, bool) and 1 <= self.port <= 65535,
             f"host {self.name}: port must be between 1 and 65535, not {self.port!r}")
        for name in ("hostname", "user", "identity_file", "proxy_jump", "python", "instance_type", "region"):
            value = getattr(self, name)
            need(isinstance(value, str), f"host {self.name}: {name} must be text")
            need(len(value) <= _MAX_CHARS[name], f"host {self.name}: {name} is {len(value):,} characters long, "
                                                  f"at most {_MAX_CHARS[name]} make sense")
            need(not _CONTROL.search(value), f"host {self.name}: {name} must not contain control characters")
            # A byte that was not UTF-8 (a lone surrogate from the shell) would crash paramiko at connect time.
            need(not has_surrogates(value), f"host {self.name}: {name} {quoted(value, 60)} holds bytes that are "
                                            f"not UTF-8 text")
        need(self.slurm is None or isinstance(self.slurm, SlurmSettings), f"host {self.name}: slurm must be settings")
        if self.local:
            need(self.ec2 is None, f"host {self.name}: --local and --ec2 exclude each other")
            need(self.slurm is None, f"host {self.name}: --slurm names a cluster's login node reached over SSH; "
                                     f"give its --hostname instead of --local")
            ssh_fields = [f.metadata["flag"] for f in fields(self) if f.name in
                          ("hostname", "user", "identity_file", "proxy_jump") and getattr(self, f.name)]
            need(not ssh_fields and self.port == SSH_PORT,
                 f"host {self.name} is --local (this computer, no SSH): drop {', '.join(ssh_fields) or '--port'}")
            return
        need(self.name != LOCAL_HOST, f"{LOCAL_HOST!r} is the built-in name of this computer; choose another name")
        if self.ec2 is not None:
            need(isinstance(self.ec2, Ec2Launch), f"host {self.name}: ec2 must be a launch setting")
            need(self.slurm is None, f"host {self.name}: --ec2 launches one instance per run; a Slurm cluster's "
                                     f"login node is already there (give its --hostname with --slurm)")
            need(not self.hostname, f"host {self.name} is launched on EC2 for each run: drop --hostname "
                                    f"(the instance gets its address when it starts)")
            need(not self.proxy_jump, f"host {self.name} is launched on EC2: reach instances through jump hosts "
                                      f"with a `Host i-*` block in ~/.ssh/config instead of --proxy-jump")
            return
        need(bool(self.hostname), f"host {self.name}: give --hostname (or --local for this computer)")
        need(not _WHITESPACE.search(self.hostname) and not self.hostname.startswith("-"),
             f"host {self.name}: hostname {quoted(self.hostname)} must not contain spaces nor start with '-'")
        need(not _WHITESPACE.search(self.user), f"host {self.name}: user {quoted(self.user)} must not contain spaces")
        parse_jump_list(self.proxy_jump)

    @property
    def address(self) -> str:
        """``user@host:port`` as a person would write it (user and default port left out when unset)."""
        if self.local:
            return "this computer"
        if self.ec2 is not None:
            return f"EC2 {self.ec2.describe()}"
        user = f"{self.user}@" if self.user else ""
        host = f"[{self.hostname}]" if ":" in self.hostname else self.hostname
        return f"{user}{host}" + (f":{self.port}" if self.port != SSH_PORT else "")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if self.slurm is None:
            del data["slurm"]  # hosts files stay as they were for every other host
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HostProfile:
        if not isinstance(data, dict):
            raise BadSpecError("a host profile must be a JSON object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise BadSpecError(f"host {data.get('name')!r}: unknown field(s) {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def field_help(cls) -> dict[str, dict[str, str]]:
        """Help text and CLI flag per field: feeds ``hosts add --help`` and the GUI's host dialog."""
        return {f.name: dict(f.metadata) for f in fields(cls)}


LOCAL = HostProfile(name=LOCAL_HOST, local=True)
