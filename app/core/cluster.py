"""A multi-node training run as one run: its nodes, its one event stream, its one Result.

Each node runs the ordinary agent with a run id of its own (``<run_id>-n<k>``: nodes
may share a home folder, as Slurm clusters do) and its own event stream.  The app
merges the streams into the run's stream (every node's event tagged ``node`` and
``node_seq``) and the nodes' Results into one (DESIGN.md §9): node 0 reports the
steps with the global batch, every node its environment and telemetry.  Pure
functions: no I/O.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.refused_events import merged as merged_refusals

Result = dict[str, Any]


@dataclass(frozen=True)
class ClusterNode:
    """One node of the run: the host as the user knows it and the agent run id it has there."""

    index: int
    host: str
    run_id: str

    @property
    def label(self) -> str:
        return f"{self.host} (node {self.index})"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "host": self.host, "run_id": self.run_id}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ClusterNode:
        return cls(int(data["index"]), str(data["host"]), str(data["run_id"]))


def node_address(hostname: str, local: bool) -> str:
    """How the other nodes reach a node: its SSH address (this computer: loopback)."""
    return "127.0.0.1" if local else hostname


def node_run_id(run_id: str, index: int) -> str:
    """The agent run id of node ``index``: distinct per node, so nodes sharing a home folder never collide."""
    return f"{run_id}-n{index}"


def cluster_label(hosts: Sequence[str]) -> str:
    """The run's host column: the node hosts in rank order (``trn-a,trn-b``)."""
    return ",".join(hosts)


def plan_nodes(run_id: str, hosts: Sequence[str]) -> list[ClusterNode]:
    return [ClusterNode(i, host, node_run_id(run_id, i)) for i, host in enumerate(hosts)]


@dataclass
class NodeOutcome:
    """What one node did: its Result (None if it never produced one), its first error, the ranks that joined."""

    node: ClusterNode
    result: Result | None = None
    error: dict[str, Any] | None = None  # {kind, message, rank?} from the node's error event or the app
    joined: set[int] = field(default_factory=set)
    ended: str | None = None  # the node stream's end status
    last_seq: int = 0  # the last of the node's own events the run's stream holds

    @property
    def status(self) -> str:
        if self.result is not None and self.result.get("status"):
            return str(self.result["status"])
        return self.ended or "failed"


def _node_error_message(outcome: NodeOutcome) -> str:
    error = outcome.error or (outcome.result or {}).get("error") or {}
    rank = error.get("rank")
    where = f"rank {rank} on {outcome.node.label}" if isinstance(rank, int) else outcome.node.label
    return f"{where}: {error.get('message') or 'it stopped without saying why'}"


def failure_sentence(outcomes: Sequence[NodeOutcome], culprit: int | None, world_size: int,
                     rendezvous: str) -> str:
    """One sentence for a failed run: the node (and rank) that failed first, and who never joined.

    A node that never joined the rendezvous is named when the others did: it is the
    one to look at (unreachable master, a firewall, a node that could not start).
    """
    joined = [o for o in outcomes if o.joined]
    missing = [o for o in outcomes if not o.joined]
    ranks_joined = sum(len(o.joined) for o in outcomes)
    if joined and missing and ranks_joined < world_size:
        names = ", ".join(o.node.label for o in missing)
        verb = "does" if len(missing) == 1 else "do"
        first = next((o for o in outcomes if o.node.index == culprit), None)
        because = f" ({_node_error_message(first)})" if first is not None and first in missing else ""
        return f"the nodes did not all join the rendezvous at {rendezvous}: {names} {verb} not appear{because}"
    if culprit is not None:
        first = next(o for o in outcomes if o.node.index == culprit)
        return _node_error_message(first)
    failed = [o for o in outcomes if o.status == "failed"]
    return _node_error_message(failed[0]) if failed else "the run failed on a node without saying why"


def merge_results(run_id: str, spec: Mapping[str, Any], outcomes: Sequence[NodeOutcome], cancelled: bool,
                  culprit: int | None, rendezvous: str) -> Result:
    """The run's one Result from its nodes' (DESIGN.md §9).

    Node 0's Result carries the steps and the global figures; every node adds its
    environment, telemetry and warnings under ``nodes``; the status is ok only when
    every node finished ok, and a failure names the node (and rank) it started on.
    """
    by_index = {o.node.index: o for o in outcomes}
    lead = by_index[0].result
    result: Result = dict(lead) if lead else {
        "schema": "neuronbench.result/1", "workload": spec.get("workload"), "backend": spec.get("backend"),
        "backend_detail": None, "spec": dict(spec), "env": None, "train": None, "infer": None, "cost": None,
        "telemetry": None, "warnings": [],
    }
    result["run_id"] = run_id
    result["host"] = cluster_label([o.node.host for o in outcomes])
    result["spec"] = dict(spec)
    nnodes = len(outcomes)
    if result.get("train"):
        result["train"] = dict(result["train"], nodes=nnodes)
    statuses = [o.status for o in outcomes]
    if "failed" in statuses and not (cancelled and culprit is None):
        status = "failed"
    elif cancelled or "cancelled" in statuses:
        status = "cancelled"
    else:
        status = "ok"
    result["status"] = status
    if status == "failed":
        world = int((result.get("train") or {}).get("world_size") or nnodes * int(spec.get("nproc") or 1))
        error = (by_index[culprit].error if culprit is not None else None) or {}
        result["error"] = {"kind": error.get("kind") or "runtime",
                           "message": failure_sentence(outcomes, culprit, world, rendezvous)}
    elif status == "cancelled":
        result["error"] = None
    warnings = list(result.get("warnings") or [])
    for outcome in outcomes:
        if outcome.node.index == 0 or outcome.result is None:
            continue
        for warning in outcome.result.get("warnings") or []:
            tagged = f"{outcome.node.host}: {warning}"
            if warning not in warnings and tagged not in warnings:
                warnings.append(tagged)
    result["warnings"] = warnings
    refused = merged_refusals([(o.node.host, (o.result or {}).get("events_refused")) for o in outcomes])
    result.pop("events_refused", None)
    if refused:
        result["events_refused"] = refused
    result["nodes"] = [
        {**o.node.to_dict(), "status": o.status,
         "error": (o.result or {}).get("error") or ({"kind": o.error.get("kind"), "message": o.error.get("message")}
                                                    if o.error else None),
         "env": (o.result or {}).get("env"), "telemetry": (o.result or {}).get("telemetry"),
         "ranks": sorted(o.joined)}
        for o in outcomes]
    return result


# What the ranks of the *other* nodes report when one node goes away: the socket to the lost
# peer closes under a collective.  Such a failure is a consequence, not the cause.
_COLLATERAL = ("connection closed by peer", "connection reset by peer", "broken pipe", "socket timeout",
               "communicator was aborted", "connection refused", "read error", "gloo", "nccl", "closed by remote",
               "was cancelled because", "signal 15", "sigterm")


def is_collateral(error: Mapping[str, Any] | None) -> bool:
    """True when a node's error reads like the loss of a peer (the cause is elsewhere)."""
    if (error or {}).get("rendezvous") == "waited":
        return True  # the master waited for nodes that did not come
    if (error or {}).get("rendezvous") == "unreachable":
        return False
    text = f"{(error or {}).get('message') or ''} {(error or {}).get('detail') or ''}".lower()
    return any(mark in text for mark in _COLLATERAL)


def declared_multinode_problem(nnodes: int, backend: str, declared_types: Sequence[str]) -> str | None:
    """The EFA refusal from the hosts' declared instance types, before anything starts (the agent checks
    the probed type again on every node)."""
    from remote_agent.capacity import multinode_problem

    for itype in declared_types:
        if itype and (backend == "neuron" or (backend == "auto" and itype.startswith(("trn", "inf")))):
            problem = multinode_problem(nnodes, "neuron", {"instance_type": itype})
            if problem:
                return problem
    return None


def node_event(node: ClusterNode, event: Mapping[str, Any]) -> dict[str, Any]:
    """A node's event as the run's stream carries it: tagged with ``node``/``node_seq``, seq and v left to the run.

    The node's ``hello`` and ``end`` become ``log`` events (the run has its own), marked
    ``node_hello``/``node_end`` so a re-attach knows which nodes had finished; its ``result``
    stays a result, tagged (the run's own Result is the untagged one, merged at the end).
    """
    tagged = {k: v for k, v in event.items() if k not in ("v", "seq")}
    tagged.update(node=node.index, node_seq=event["seq"])
    if event["type"] == "hello":
        tagged = {"type": "log", "t": event["t"], "level": "info", "node": node.index, "node_seq": event["seq"],
                  "node_hello": {"run_id": event.get("run_id"), "pid": event.get("pid")},
                  "message": f"{node.label}: agent {event.get('agent_version')} (Python {event.get('python')}, "
                             f"pid {event.get('pid')}) runs {node.run_id}"}
    elif event["type"] == "end":
        tagged = {"type": "log", "t": event["t"], "level": "info", "node": node.index, "node_seq": event["seq"],
                  "node_end": event.get("status"), "message": f"{node.label} ended: {event.get('status')}"}
    return tagged


def note_node_event(outcome: NodeOutcome, tagged: Mapping[str, Any]) -> None:
    """Keep what the merged Result needs from one (tagged) node event."""
    outcome.last_seq = max(outcome.last_seq, int(tagged.get("node_seq") or 0))
    kind = tagged.get("type")
    if kind == "result":
        outcome.result = dict(tagged.get("result") or {}, host=outcome.node.host)
    elif kind == "error" and outcome.error is None:
        outcome.error = {k: tagged.get(k) for k in ("kind", "message", "detail", "rank", "rendezvous")}
    elif kind == "log":
        if isinstance(tagged.get("joined"), int):
            outcome.joined.add(tagged["joined"])
        if tagged.get("node_end"):
            outcome.ended = str(tagged["node_end"])


def outcomes_from_events(nodes: Sequence[ClusterNode], events: Sequence[Mapping[str, Any]]) -> dict[int, NodeOutcome]:
    """What each node had done, from the run's stream as stored (a re-attach picks up from there)."""
    outcomes = {node.index: NodeOutcome(node) for node in nodes}
    for event in events:
        index = event.get("node")
        if isinstance(index, int) and index in outcomes:
            note_node_event(outcomes[index], event)
    return outcomes


def launched_nodes_problem(hosts: Sequence[tuple[str, bool]]) -> str | None:
    """Multi-node runs span machines that are already there: an ``--ec2`` host is launched per run, alone.

    ``hosts``: (name, is an --ec2 host).  Launching a cluster (EFA, a placement group, a security group
    open between the nodes) is what ParallelCluster or HyperPod do; NeuronBench then runs on it over
    SSH or Slurm.
    """
    launched = [name for name, ec2 in hosts if ec2]
    if not launched:
        return None
    return (f"{', '.join(launched)} {'is an --ec2 host' if len(launched) == 1 else 'are --ec2 hosts'}, launched "
            f"for one run on its own: a multi-node run spans machines that are already there (a cluster made "
            f"with ParallelCluster or HyperPod, added as SSH or Slurm hosts)")
