"""How the agent starts copies of itself (supervisor, workload workers, torchrun)."""
from __future__ import annotations

import os
import sys
from typing import List, Optional

from remote_agent.protocol import NodePlacement


def agent_command() -> List[str]:
    """argv that runs this same agent: ``python agent.pyz`` or ``python -m remote_agent``."""
    entry = os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    # A zipapp is a file not ending in .py (under -m, argv[0] is remote_agent/__main__.py).  Not
    # zipfile.is_zipfile: importing zipfile costs ~10 ms on every agent start.
    if entry and os.path.isfile(entry) and not entry.endswith(".py"):
        return [sys.executable, entry]
    return [sys.executable, "-m", "remote_agent"]


def torchrun_command(nproc: int, agent_args: List[str], node: Optional[NodePlacement] = None) -> List[str]:
    """torchrun (``python -m torch.distributed.run``) starting ``nproc`` agent workers on this host.

    One node: ``--standalone`` makes the rendezvous local (localhost, a free port).  One node of
    several: torchrun's static rendezvous at the master's address and port, this node's rank given,
    with the join timeout the app chose (a node that never joins fails the run instead of hanging it).
    """
    launcher = [sys.executable, "-m", "torch.distributed.run"]
    if node is None:
        launcher += ["--standalone"]
    else:
        launcher += ["--nnodes", str(node.nnodes), "--node_rank", str(node.node_rank),
                     "--master_addr", node.master_addr, "--master_port", str(node.master_port),
                     "--rdzv_conf", "timeout=%d" % master_patience(node)]
    launcher += ["--nproc_per_node", str(nproc)]
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


def master_patience(node: NodePlacement) -> int:
    """The rendezvous timeout of this node's torchrun.

    The master waits longer than the others: when a node cannot reach it, that node gives
    up first and says so (the cause), before the master gives up waiting (the consequence).
    """
    timeout = node.rendezvous_timeout_s
    return timeout * 2 + 30 if node.node_rank == 0 else timeout
