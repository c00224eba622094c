"""How the agent starts copies of itself (supervisor, workload workers, torchrun)."""
from __future__ import annotations

import os
import sys
from typing import List


def agent_command() -> List[str]:
    """argv that runs this same agent: ``python agent.pyz`` or ``python -m remote_agent``."""
    entry = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    # A zipapp is a file not ending in .py (under -m, argv[0] is remote_agent/__main__.py).  Not
    # zipfile.is_zipfile: importing zipfile costs ~10 ms on every agent start.
    if entry and os.path.isfile(entry) and not entry.endswith(".py"):
        return [sys.executable, entry]
    return [sys.executable, "-m", "remote_agent"]


def torchrun_command(nproc: int, agent_args: List[str]) -> List[str]:
    """torchrun (``python -m torch.distributed.run``) starting ``nproc`` agent workers on this host.

    ``--standalone`` makes the rendezvous local (localhost, a free port).
    """
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc)]
    command = agent_command()
    if command[1] == "-m":
        return launcher + ["-m", "remote_agent"] + agent_args
    return launcher + [command[1]] + agent_args


def child_env() -> dict:
    """Environment for children; in development (-m) keep the agent importable."""
    env = dict(os.environ)
    if agent_command()[1] == "-m":
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = package_root + os.pathsep + env.get("PYTHONPATH", "")
    return env
