"""Host profiles: the machines a benchmark runs on.  ``local`` (this computer) always exists."""
from __future__ import annotations

from dataclasses import asdict, dataclass

LOCAL_HOST = "local"


@dataclass(frozen=True)
class HostProfile:
    """How to reach a host and what it is.  Never holds a secret (keys stay in files or the ssh-agent)."""

    name: str
    local: bool = False
    hostname: str = ""
    port: int = 22
    user: str = ""
    identity_file: str = ""
    proxy_jump: str = ""
    python: str = ""
    instance_type: str = ""
    region: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


LOCAL = HostProfile(name=LOCAL_HOST, local=True)
