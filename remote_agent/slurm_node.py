"""One node of a multi-node run that Slurm started (``agent _slurm_node RUN_ID`` under ``srun``).

The app submits a batch job on the cluster's login node whose ``srun`` starts this
once on every allocated node, with ``SLURM_NODEID`` (the node's rank),
``SLURM_NNODES`` and ``NEURONBENCH_MASTER_ADDR`` (the first node's address in the
allocation) in the environment.  The run's spec waits in the job folder
``runs/<run_id>/`` (a home folder shared with the login node, as Slurm clusters
have).  Node 0 picks the rendezvous ports and writes them there for the others;
then each node runs the ordinary supervisor in the foreground, in its own run
folder ``runs/<run_id>-n<K>/``: Slurm tracks the processes, ``scancel`` stops them
(the supervisor ends the run ``cancelled``), and the login node's ``attach``
follows each node's events through the shared folder.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict

from remote_agent.diskspace import Reserve, full_sentence, is_disk_full
from remote_agent.eventlog import EventLog, emit_hello
from remote_agent.multinode import free_ports
from remote_agent.protocol import NodePlacement, RunSpec
from remote_agent.rundir import RunDir, write_pid_file
from remote_agent.slurm_job import SLURM_FILE
from remote_agent.supervisor import Supervisor

MASTER_FILE = "master.json"


def node_run_id(run_id: str, index: int) -> str:
    return "%s-n%d" % (run_id, index)  # as app.core.cluster names them


def _write_json(path: str, data: Dict[str, Any]) -> None:
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as handle:
        json.dump(data, handle)
    os.replace(tmp, path)  # whole or not at all: other nodes poll for it


def _master(job: RunDir, rank: int, address: str, timeout_s: float) -> Dict[str, Any]:
    """Node 0 picks two free ports on its address and publishes them; the others wait for them."""
    path = os.path.join(job.path, MASTER_FILE)
    if rank == 0:
        master_port, comm_port = free_ports(address, 2)
        found = {"address": address, "master_port": master_port, "comm_port": comm_port}
        _write_json(path, found)
        return found
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with open(path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise RuntimeError("node 0 did not publish the rendezvous ports in %s within %d s"
                                   % (path, timeout_s)) from None
            time.sleep(0.2)


def node_main(run_id: str) -> int:
    """Set up this node's run folder from the job folder and the Slurm environment, then supervise it."""
    rank, nnodes = int(os.environ["SLURM_NODEID"]), int(os.environ["SLURM_NNODES"])
    job = RunDir.for_id(run_id)
    try:
        with open(job.spec) as handle:
            spec = RunSpec.from_dict(json.load(handle))
        with open(os.path.join(job.path, "request.json")) as handle:
            request = json.load(handle)
    except (OSError, ValueError) as exc:
        # One line in the job's output file: the app reports it as the reason the job failed.
        sys.stderr.write("neuronbench: node %d (%s) cannot read the job folder the login node prepared (is the home "
                         "folder shared with the nodes?): %s\n"
                         % (rank, os.environ.get("SLURMD_NODENAME") or "?", exc))
        sys.stderr.flush()
        return 1
    timeout = int(request.get("rendezvous_timeout_s") or 300)
    found = _master(job, rank, os.environ["NEURONBENCH_MASTER_ADDR"], timeout)
    node = NodePlacement(node_rank=rank, nnodes=nnodes, master_addr=str(found["address"]),
                         master_port=int(found["master_port"]), comm_port=int(found["comm_port"]),
                         name=os.environ.get("SLURMD_NODENAME") or "", rendezvous_timeout_s=timeout)
    run = RunDir.for_id(node_run_id(run_id, rank))
    run.create()
    try:
        Reserve(run.path).make()  # the room the run's last events need if the disk fills (diskspace.py)
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        sys.stderr.write("neuronbench: node %d: %s\n" % (rank, full_sentence(run.path)))
        sys.stderr.flush()
        return 1
    with open(run.spec, "w") as handle:
        json.dump(spec.to_dict(), handle, indent=1)
    _write_json(run.node, node.to_dict())
    _write_json(os.path.join(run.path, SLURM_FILE), {"job_id": os.environ.get("SLURM_JOB_ID"), "node": rank})
    log = EventLog.open(run.events)
    emit_hello(log, run.run_id, os.getpid(), spec.to_event_dict())
    log.close()
    write_pid_file(run, os.getpid())
    return Supervisor(run).main()
