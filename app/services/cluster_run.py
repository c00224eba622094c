"""One training run across several hosts: the ordinary agent on each node, torchrun's rendezvous between them.

``ClusterRun`` prepares every node (connect, deploy) before starting any, asks
node 0's agent for the master's address (the one on its route to node 1) and two
free ports, starts ``agent run`` on every node with its NodePlacement, and merges
the node streams into the run's one stream: the run's ``hello`` first, then every
node event tagged ``node`` and ``node_seq`` and numbered in arrival order, then
the merged ``result`` and ``end``.  Each node's RunSession reconnects on its own
after a dropped connection.  When a node fails, the others are cancelled (the
agent's cancel leaves no process behind), and the failure names the node (and
rank) it started on.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import app
from app.core.cluster import (
    ClusterNode,
    NodeOutcome,
    is_collateral,
    merge_results,
    node_event,
    note_node_event,
    outcomes_from_events,
    plan_nodes,
)
from app.core.errors import AgentError, NeuronBenchError
from app.core.quoting import clean, quoted
from app.services.run_control import TappedTransport, cancel_run
from app.services.session import CANCEL_TIMEOUT_S, RECONNECT_FOR_S, Detached, Event, EventCallback, RunSession
from app.services.transport import AgentProcess, Transport
from remote_agent.protocol import PROTOCOL_VERSION, RENDEZVOUS_TIMEOUT_S, NodePlacement, RunSpec, SpecError, new_run_id

Notice = Callable[[str], None]


@dataclass(frozen=True)
class NodeTarget:
    """A host to run one node on: its transport, and the address other nodes know it by."""

    transport: Transport
    address: str


class _Node:
    """One node's session, and whether a cancel may be sent to it yet."""

    def __init__(self, plan: ClusterNode, target: NodeTarget, on_start: Callable[[AgentProcess], None]) -> None:
        self.plan = plan
        self.transport = target.transport  # the host's own transport (connect, deploy)
        # Every agent command started on the node is seen, so that a detach can stop following them all.
        self.target = NodeTarget(TappedTransport(target.transport, on_start), target.address)
        self.outcome = NodeOutcome(plan)
        self.session: RunSession | None = None
        self.ready = False  # the node's supervisor has its SIGTERM handler (its second event came)
        self.cancel_sent = False
        self.thread: threading.Thread | None = None


class ClusterRun:
    """A multi-node training run; ``run()`` blocks and returns the merged Result (a failed run is a Result too)."""

    def __init__(self, targets: Sequence[NodeTarget], spec: RunSpec, run_id: str | None = None,
                 on_event: EventCallback | None = None, on_notice: Notice | None = None,
                 master_addr: str | None = None, rendezvous_timeout_s: int = RENDEZVOUS_TIMEOUT_S,
                 reconnect_for_s: float = RECONNECT_FOR_S) -> None:
        if len(targets) < 2:
            raise ValueError("a cluster run needs at least two nodes")
        if spec.nnodes != len(targets):
            raise ValueError(f"the spec says {spec.nnodes} nodes but {len(targets)} hosts were given")
        self.spec = spec
        self.run_id = run_id or new_run_id()
        self.on_event = on_event
        self.on_notice = on_notice
        self.master_addr = master_addr
        self.rendezvous_timeout_s = rendezvous_timeout_s
        self.reconnect_for_s = reconnect_for_s
        hosts = [t.transport.host for t in targets]
        self._processes: list[AgentProcess] = []
        self._detached = False
        self.nodes = [_Node(plan, target, self._started)
                      for plan, target in zip(plan_nodes(self.run_id, hosts), targets, strict=True)]
        self.host = ",".join(hosts)
        self.rendezvous = ""
        self._lock = threading.Lock()
        self._seq = 0
        self._cancelled = False
        self._stopping = False  # a node failed: the others are being stopped
        self._culprit: int | None = None
        self.launched = False  # the nodes were asked to run (they may be going on there)
        self._cancels: list[threading.Thread] = []

    # ------------------------------------------------------------------ public
    def run(self) -> dict[str, Any]:
        """Prepare every node, start them, follow them to the end; the merged Result."""
        self._prepare_all()
        with self._lock:  # a cancel or detach from here on finds the nodes started, or none
            if self._detached:
                raise Detached(f"run {self.run_id} was not started")
            self.launched = not self._cancelled
        if not self.launched:
            return self._merged()
        address, master_port, comm_port = self._choose_master()
        self.rendezvous = f"{address}:{master_port}"
        self._emit({"type": "hello", "agent_version": app.__version__, "protocol_version": PROTOCOL_VERSION,
                    "pid": os.getpid(), "python": sys.version.split()[0], "run_id": self.run_id,
                    "spec": self.spec.to_dict(), "nodes": [n.plan.to_dict() for n in self.nodes],
                    "rendezvous": self.rendezvous})
        self._say(f"{len(self.nodes)} nodes, rendezvous at {self.rendezvous}")
        for node in self.nodes:
            placement = NodePlacement(node_rank=node.plan.index, nnodes=len(self.nodes), master_addr=address,
                                      master_port=master_port, comm_port=comm_port, name=node.plan.host,
                                      rendezvous_timeout_s=self.rendezvous_timeout_s)
            node.session = RunSession(node.target.transport, self.spec, run_id=node.plan.run_id,
                                      reconnect_for_s=self.reconnect_for_s, placement=placement)
        return self._follow(lambda node: node.session.run())

    def attach(self, held: Iterable[Event], rendezvous: str = "") -> dict[str, Any]:
        """Follow a cluster run started earlier, given the run's events held so far (the run store's).

        Each node is attached from the first of its own events not held; a node whose part
        had ended is not contacted again (its Result and end are among the held events).
        """
        held = list(held)
        self._seq = max([self._seq, *(e["seq"] for e in held)])  # after any event this object emitted itself
        self.rendezvous = rendezvous
        self.launched = True
        outcomes = outcomes_from_events([n.plan for n in self.nodes], held)
        for node in self.nodes:
            node.outcome = outcomes[node.plan.index]
            node.ready = True
            if node.outcome.ended is None:
                node.session = RunSession(node.target.transport, self.spec, run_id=node.plan.run_id,
                                          reconnect_for_s=self.reconnect_for_s)
        return self._follow(lambda node: node.session.attach(from_seq=node.outcome.last_seq + 1))

    @property
    def cancel_sent(self) -> bool:
        """A cancel went out to a node (it may be ending by itself)."""
        return any(node.cancel_sent for node in self.nodes)

    def describe(self) -> str:
        return ", ".join(f"{n.plan.host} ({n.target.transport.describe()})" for n in self.nodes)

    def run_ended(self, result: dict[str, Any] | None, last: bool = True) -> dict[str, Any] | None:
        """The run ended: each node's host hears it (as a Transport would for a run of its own)."""
        for node in self.nodes:
            node.transport.run_ended(None, last)
        return result

    def release(self) -> None:
        for node in self.nodes:
            node.transport.release()

    def cancel(self) -> None:
        """Stop the run on every node (from any thread); the run ends ``cancelled``."""
        with self._lock:
            self._cancelled = True
        self._cancel_nodes(None)

    def detach(self) -> None:
        """Stop following the run and leave it going on every node (from any thread); ``run`` raises Detached."""
        with self._lock:
            self._detached = True
            processes = list(self._processes)
        for node in self.nodes:
            if node.session is not None:
                node.session.detach()  # no node reconnects to a run we let go
        for process in processes:
            process.kill()  # the followers (local `agent run` or SSH channels), never the supervisors

    def _started(self, process: AgentProcess) -> None:
        with self._lock:
            self._processes.append(process)
            detached = self._detached
        if detached:
            process.kill()

    # ------------------------------------------------------------------ preparing
    def _prepare_all(self) -> None:
        """Connect to and deploy on every node first: an unreachable node fails the run before any node starts."""
        errors: dict[int, BaseException] = {}

        def prepare(node: _Node) -> None:
            setup = getattr(node.transport, "setup", None)
            try:
                if setup is not None:
                    setup()
            except BaseException as exc:
                errors[node.plan.index] = exc

        threads = [threading.Thread(target=prepare, args=(n,), name=f"prepare-{n.plan.host}", daemon=True)
                   for n in self.nodes]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if errors:
            index = min(errors)
            exc = errors[index]
            label = self.nodes[index].plan.label
            if isinstance(exc, NeuronBenchError):
                raise type(exc)(f"{label} is not ready: {exc}", detail=exc.detail) from None
            raise AgentError(f"{label} is not ready: {type(exc).__name__}: {exc}") from None

    def _choose_master(self) -> tuple[str, int, int]:
        """Node 0's address on its route to node 1 (unless given) and two ports free there.

        Node 0's answer is a host's text like any other: whatever its shape, a wrong one fails the
        run in one sentence naming the node, before any node is started.
        """
        lead = self.nodes[0]
        process = lead.target.transport.start(["master", "--peer", self.nodes[1].target.address])
        lines = [line for line in process.lines() if line.strip()]
        code = process.wait(timeout=30)
        failed = f"{lead.plan.label} could not pick a master address and ports"
        try:
            found = json.loads(lines[-1])
        except (IndexError, ValueError, RecursionError):
            raise AgentError(f"{failed}: {clean(process.stderr_text().strip() or f'agent exit status {code}')}",
                             detail=process.stderr_text()) from None
        try:  # NodePlacement's own checks: the address torchrun takes, ports 1-65535 (comm_port 0: not Neuron)
            address = self.master_addr or found["address"]
            NodePlacement(node_rank=0, nnodes=len(self.nodes), master_addr=address,
                          master_port=found["master_port"], comm_port=found["comm_port"])
        except (KeyError, TypeError, SpecError) as exc:
            why = exc if isinstance(exc, SpecError) else f"no {exc}" if isinstance(exc, KeyError) else "not an object"
            raise AgentError(f"{failed}: its answer {quoted(lines[-1].decode(errors='replace'), 80)} is not an "
                             f"address and two ports ({clean(why)})") from None
        return address, found["master_port"], found["comm_port"]

    # ------------------------------------------------------------------ following
    def _follow(self, start: Callable[[_Node], dict[str, Any]]) -> dict[str, Any]:
        for node in self.nodes:
            if node.session is None:
                continue  # re-attached after this node's part had ended
            node.session.on_event = lambda event, node=node: self._node_event(node, event)
            node.session.on_notice = lambda text, node=node: self._say(f"{node.plan.host}: {text}")
            node.thread = threading.Thread(target=self._node_main, args=(node, start),
                                           name=f"node-{node.plan.index}-{node.plan.host}", daemon=True)
            node.thread.start()
        for node in self.nodes:
            if node.thread is not None:
                node.thread.join()
        for thread in list(self._cancels):  # each returns once no process of its node is left
            thread.join(CANCEL_TIMEOUT_S + 5)
        if self._detached:
            raise Detached(f"run {self.run_id} goes on on its {len(self.nodes)} nodes")
        result = self._merged()
        self._emit({"type": "result", "result": result})
        self._emit({"type": "end", "status": result["status"]})
        return result

    def _merged(self) -> dict[str, Any]:
        """The run's one Result from its nodes' outcomes."""
        return merge_results(self.run_id, self.spec.to_dict(), [n.outcome for n in self.nodes],
                             self._cancelled, self._culprit, self.rendezvous or "the master")

    def _node_main(self, node: _Node, start: Callable[[_Node], dict[str, Any]]) -> None:
        try:
            node.outcome.result = start(node)
        except Detached:
            return  # we stopped following: the node goes on
        except NeuronBenchError as exc:
            if self._detached:
                return  # not a failure: we stopped following
            if node.outcome.error is None:
                node.outcome.error = {"kind": type(exc).__name__, "message": str(exc), "detail": exc.detail}
            self._emit({"type": "error", "kind": "runtime", "message": f"{node.plan.label}: {exc}",
                        "detail": exc.detail or "", "node": node.plan.index})
        except Exception as exc:  # a bug must not leave the other nodes running
            node.outcome.error = {"kind": "internal", "message": f"{type(exc).__name__}: {exc}"}
        if node.outcome.status != "ok":
            self._node_failed(node)

    def _node_failed(self, node: _Node) -> None:
        """The first node to fail for a reason of its own is the culprit; every other node is stopped."""
        if self._detached:
            return
        error = node.outcome.error or (node.outcome.result or {}).get("error")
        with self._lock:
            if self._culprit is None and not self._cancelled and node.outcome.status == "failed" \
                    and not is_collateral(error):
                self._culprit = node.plan.index
            first = not self._stopping and not self._cancelled
            self._stopping = True
        if first:
            self._say(f"{node.plan.label} {node.outcome.status}: stopping the other nodes")
        self._cancel_nodes(node)

    def _cancel_nodes(self, except_node: _Node | None) -> None:
        for other in self.nodes:
            if other is except_node:
                continue
            with self._lock:
                due = other.ready and not other.cancel_sent and other.outcome.ended is None
                if due:
                    other.cancel_sent = True
            if due:
                thread = threading.Thread(target=self._send_cancel, args=(other,), name=f"cancel-{other.plan.host}",
                                          daemon=True)
                self._cancels.append(thread)
                thread.start()

    def _send_cancel(self, node: _Node) -> None:
        try:
            cancel_run(node.target.transport, node.plan.run_id)
        except NeuronBenchError as exc:
            self._say(f"could not cancel {node.plan.label}: {exc}")

    def _stop_wanted(self) -> bool:
        return self._cancelled or any(n.outcome.ended not in (None, "ok") or n.outcome.error for n in self.nodes)

    def _node_event(self, node: _Node, event: Event) -> None:
        kind = event["type"]
        if kind != "hello" and not node.ready:
            with self._lock:
                node.ready = True
            if self._stop_wanted():
                self._cancel_nodes(None)  # a cancel wanted before this node could take one
        tagged = node_event(node.plan, event)
        note_node_event(node.outcome, tagged)
        self._emit(tagged)

    # ------------------------------------------------------------------ the merged stream
    def _emit(self, body: dict[str, Any]) -> None:
        with self._lock:
            self._seq += 1
            event = {"v": PROTOCOL_VERSION, "seq": self._seq, "t": body.pop("t", None) or time.time(), **body}
            if self.on_event is not None:
                self.on_event(event)  # under the lock: one event at a time, in seq order

    def _say(self, text: str) -> None:
        if self.on_notice is not None:
            self.on_notice(text)
