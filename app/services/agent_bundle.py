"""Building the agent zipapp that is shipped to hosts, named by its content hash.

The archive is deterministic (sorted entries, fixed timestamps and modes), so
the same sources always give the same hash: a host that already holds
``neuronbench-agent-<hash>.pyz`` needs no upload.
"""
from __future__ import annotations

import hashlib
import io
import os
import tempfile
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import remote_agent

_ENTRY = b"import sys\nfrom remote_agent.__main__ import main\nsys.exit(main())\n"
_EPOCH = (1980, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class AgentBundle:
    path: Path
    sha256: str
    version: str

    @property
    def name(self) -> str:
        return self.path.name


# What the agent is made of: its modules, and the data files it reads with pkgutil.get_data
# (remote_agent/monitor/neuron-monitor.json, the neuron-monitor config template).
AGENT_FILE_SUFFIXES = (".py", ".json")


def _agent_sources() -> list[tuple[str, bytes]]:
    """(archive name, bytes) of every source and data file of the remote_agent package, via importlib.resources."""
    found: list[tuple[str, bytes]] = []

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.name == "__pycache__":
                continue
            name = f"{prefix}/{child.name}"
            if child.is_dir():
                walk(child, name)
            elif child.name.endswith(AGENT_FILE_SUFFIXES):
                found.append((name, child.read_bytes()))

    walk(resources.files("remote_agent"), "remote_agent")
    return sorted(found)


def build_archive() -> bytes:
    """The zipapp's bytes: ``__main__.py`` plus the ``remote_agent`` package."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in [("__main__.py", _ENTRY), *_agent_sources()]:
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def ensure_bundle(directory: Path) -> AgentBundle:
    """Build the agent into ``directory`` unless that exact content is already there."""
    data = build_archive()
    digest = hashlib.sha256(data).hexdigest()
    path = Path(directory) / f"neuronbench-agent-{remote_agent.__version__}-{digest[:16]}.pyz"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Write-then-rename: a concurrent builder never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    return AgentBundle(path=path, sha256=digest, version=remote_agent.__version__)


# Agent commands that only read and write files in run directories: stdlib, nothing from site-packages.
_STDLIB_COMMANDS = ("run", "attach", "cancel")


def agent_argv(python: str, agent: str, args: list[str] | tuple[str, ...]) -> list[str]:
    """The argv that runs an agent command: ``python [-S] agent.pyz ARGS``.

    ``run``, ``attach`` and ``cancel`` start Python without ``site`` (-S): they need
    the stdlib only, and reading a big venv's .pth files costs ~100 ms a start
    (half the time to a run's first event).  ``run`` still starts the supervisor
    and workers with ``site``, where torch lives; ``probe`` keeps it to read
    package versions.
    """
    flags = ["-S"] if args and args[0] in _STDLIB_COMMANDS else []
    return [python, *flags, agent, *args]
