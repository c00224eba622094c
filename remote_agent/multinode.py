"""One node of a multi-node training run: its placement, its environment, and the master's ports.

The app starts the ordinary detached agent on every node (over SSH, or through
Slurm's ``srun``) with the same RunSpec and a NodePlacement of its own; each
node's supervisor then starts torchrun with ``--nnodes``/``--node_rank`` and the
master's address, so torchrun's own static rendezvous joins the nodes.
NeuronBench schedules nothing itself.
"""
from __future__ import annotations

import json
import re
import socket
from typing import Any, Dict, List, Optional

from remote_agent.capacity import effective_backend
from remote_agent.probe.compile_cache import DEFAULT_DIR as NODE_LOCAL_COMPILE_CACHE
from remote_agent.protocol import NodePlacement, RunSpec
from remote_agent.rundir import RunDir

# Glibc keeps up to 8 x cores malloc arenas: on a 128-vCPU node with 32 workers that is memory
# the runtime needs.  AWS's multi-node Trainium samples cap it (64 or 128).
MALLOC_ARENA_MAX = "64"


def load_placement(run: RunDir) -> Optional[NodePlacement]:
    """This node's placement, or None for a one-node run (no node.json)."""
    try:
        with open(run.node) as handle:
            return NodePlacement.from_dict(json.load(handle))
    except FileNotFoundError:
        return None


def node_env(node: Optional[NodePlacement], spec: RunSpec, env: Dict[str, Any]) -> Dict[str, str]:
    """Environment for the workload on one node of a multi-node run (empty for one node).

    Neuron nodes get what AWS's own multi-node samples set: libfabric on EFA with device RDMA
    and fork safety, the Neuron runtime's collectives rendezvous (``NEURON_RT_ROOT_COMM_ID``, the
    same value on every node), a capped malloc arena count, and a compile cache on the node's
    own disk unless the user named one (a shared cache written by several nodes at once is a
    choice, not a default).
    """
    if node is None:
        return {}
    extra = {"NEURONBENCH_NODE_RANK": str(node.node_rank), "NEURONBENCH_NNODES": str(node.nnodes)}
    if effective_backend(spec.backend, env) == "neuron":
        extra.update({
            "FI_PROVIDER": "efa",
            "FI_EFA_USE_DEVICE_RDMA": "1",
            "FI_EFA_FORK_SAFE": "1",
            "NEURON_RT_ROOT_COMM_ID": "%s:%d" % (node.master_addr, node.comm_port),
            "MALLOC_ARENA_MAX": MALLOC_ARENA_MAX,
        })
        if not spec.compile_cache:
            extra["NEURON_COMPILE_CACHE_URL"] = NODE_LOCAL_COMPILE_CACHE
    return extra


def free_ports(address: str, count: int) -> List[int]:
    """``count`` distinct TCP ports free on ``address`` right now (the kernel picks them)."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((address, 0))
            sockets.append(sock)
            ports.append(sock.getsockname()[1])
    finally:
        for sock in sockets:
            sock.close()
    return ports


def address_toward(peer: str) -> str:
    """This host's address on the route to ``peer``: the address the other nodes can reach it on.

    A UDP ``connect`` sends nothing; it only makes the kernel choose the source address.  On
    EC2 that is the private address in the VPC even when the app reached the node by a public name.
    """
    family = socket.AF_INET6 if ":" in peer and not peer.count(".") else socket.AF_INET
    infos = socket.getaddrinfo(peer, 9, family, socket.SOCK_DGRAM)
    with socket.socket(infos[0][0], socket.SOCK_DGRAM) as sock:
        sock.connect(infos[0][4])
        return str(sock.getsockname()[0])


def port_is_free(address: str, port: int) -> bool:
    try:
        with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address, port))
        return True
    except OSError:
        return False


def master_endpoint(peer: Optional[str]) -> Dict[str, Any]:
    """``agent master --peer HOST``: the address and two free ports for a run whose master is this host."""
    address = address_toward(peer) if peer else socket.gethostbyname(socket.gethostname())
    master_port, comm_port = free_ports(address, 2)
    return {"address": address, "master_port": master_port, "comm_port": comm_port,
            "hostname": socket.gethostname()}


# torchrun's static rendezvous, as it fails (torch 2.9): the master's store gives up waiting for the
# other nodes' agents; a node that cannot reach the master's store gives up connecting.
_MASTER_WAITED = re.compile(r"waiting for clients\. (\d+)/(\d+) clients joined")
_CLIENT_UNREACHABLE = re.compile(r"while trying to connect to|failed to connect/validate to host")


def rendezvous_failure(node: NodePlacement, stderr: str) -> Optional[Dict[str, Any]]:
    """The error of a node whose torchrun failed in the rendezvous, from its output; None if it did not.

    ``rendezvous``: ``waited`` on the master (a consequence: some other node did not come),
    ``unreachable`` on a node that could not reach the master (the cause, named by the app).
    """
    where = "%s:%d" % (node.master_addr, node.master_port)
    waited = _MASTER_WAITED.search(stderr)
    if waited:
        return {"kind": "runtime", "rendezvous": "waited",
                "message": "the rendezvous at %s timed out with %s of %s nodes joined: the others did not reach it"
                           % (where, waited.group(1), waited.group(2))}
    if _CLIENT_UNREACHABLE.search(stderr):
        return {"kind": "runtime", "rendezvous": "unreachable",
                "message": "this node could not reach the rendezvous at %s: every node must reach that address "
                           "and port (check the security group or firewall between the nodes, or set --master-addr)"
                           % where}
    return None
