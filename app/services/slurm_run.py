"""One training run on N nodes of a Slurm cluster, through its login node: sbatch, srun, the agents' streams.

``SlurmRun`` deploys the agent to the login node (a home folder the nodes share),
stages the job folder (``agent stage``), submits the batch job (``sbatch``: N
nodes, one task each, ``srun`` starting ``agent _slurm_node`` on every node) and
emits the run's ``hello`` with the job id.  While Slurm holds the job back, the
stream says so (``queued (Resources)``); once the nodes have started, every
node's events are followed through the login node (``agent attach R-nK``) and
merged as the SSH cluster run merges them (it *is* a ClusterRun whose nodes are
all reached through the login node).  Cancel is ``scancel``: Slurm stops every
process of the job on every node.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Iterable
from typing import Any

import app
from app.core.errors import AgentError, ConnectError, NeuronBenchError, SchedulerError
from app.core.slurm import JobState, SlurmSettings
from app.core.slurm_script import batch_script, output_path, sbatch_argv
from app.services.agent_bundle import agent_argv
from app.services.cluster_run import ClusterRun, Detached, NodeTarget
from app.services.session import RECONNECT_FOR_S, Event, EventCallback
from app.services.slurm_jobs import SlurmJobs
from app.services.ssh_transport import SshTransport
from app.services.transport import Transport
from remote_agent.protocol import PROTOCOL_VERSION, RENDEZVOUS_TIMEOUT_S, RunSpec

POLL_S = 1.0
UNKNOWN_POLLS = 5  # a busy controller may briefly answer neither squeue nor scontrol for a job it has


def job_output_reason(tail: str) -> str:
    """The line of a job's output that says why it failed: the last one not from srun or slurmstepd."""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    own = [line for line in lines if not line.startswith(("srun:", "slurmstepd"))]
    return (own or lines or ["its output file says nothing"])[-1]


class SlurmRun(ClusterRun):
    """A multi-node training run as one Slurm batch job; ``run()`` blocks and returns the merged Result."""

    def __init__(self, login: Transport, settings: SlurmSettings, spec: RunSpec, run_id: str | None = None,
                 on_event: EventCallback | None = None, on_notice=None,
                 rendezvous_timeout_s: int = RENDEZVOUS_TIMEOUT_S, reconnect_for_s: float = RECONNECT_FOR_S,
                 jobs: SlurmJobs | None = None, job_id: str = "", job_dir: str = "", poll_s: float = POLL_S) -> None:
        super().__init__([NodeTarget(login, "")] * spec.nnodes, spec, run_id, on_event=on_event,
                         on_notice=on_notice, rendezvous_timeout_s=rendezvous_timeout_s,
                         reconnect_for_s=reconnect_for_s)
        self.login = login
        self.host = login.host  # the run's host is the cluster's login node, whatever nodes Slurm picks
        self.settings = settings
        if jobs is None:
            if not isinstance(login, SshTransport):
                raise ValueError(f"{login.host} is reached without SSH; a Slurm login node is an SSH host")
            jobs = SlurmJobs.over_ssh(login)
        self.jobs = jobs
        self.job_id = job_id
        self.job_dir = job_dir
        self.poll_s = poll_s
        self.state: JobState | None = None
        self._scancel_sent = False

    # ------------------------------------------------------------------ public
    def run(self) -> dict[str, Any]:
        """Stage, submit, wait for the allocation, follow every node to the end; the merged Result."""
        setup = self.login.setup()
        self.job_dir = self._stage()
        node_argv = agent_argv(setup.python, setup.agent_path, ["_slurm_node", self.run_id])
        with self._lock:  # a cancel or detach from here on finds the job submitted, or none
            if self._detached:
                raise Detached(f"run {self.run_id} was not submitted")
            self.launched = not self._cancelled
        if not self.launched:
            return self._merged()
        self.job_id = self.jobs.submit(sbatch_argv(self.run_id, len(self.nodes), self.job_dir, self.settings),
                                       batch_script(self.run_id, len(self.nodes), node_argv), self.settings.partition)
        self._emit({"type": "hello", "agent_version": app.__version__, "protocol_version": PROTOCOL_VERSION,
                    "pid": os.getpid(), "python": sys.version.split()[0], "run_id": self.run_id,
                    "spec": self.spec.to_dict(), "nodes": [n.plan.to_dict() for n in self.nodes],
                    "slurm": {"host": self.login.host, "job_id": self.job_id, "job_dir": self.job_dir,
                              "settings": self.settings.to_dict()}})
        self._say(f"submitted as Slurm job {self.job_id} on {self.login.host} ({self.settings.describe()})")
        if self._cancelled:
            self._scancel()
        return self._after_submit([])

    def attach(self, held: Iterable[Event], rendezvous: str = "") -> dict[str, Any]:
        """Follow a Slurm run started earlier from the events the run store holds (waiting if still queued)."""
        held = list(held)
        self._seq = max([self._seq, *(e["seq"] for e in held)])
        self.launched = True
        return self._after_submit(held)

    def cancel(self) -> None:
        """``scancel`` the job (from any thread): queued, it never starts; running, Slurm stops every node."""
        with self._lock:
            self._cancelled = True
        self._scancel()

    @property
    def cancel_sent(self) -> bool:
        return self._scancel_sent

    def run_ended(self, result: dict[str, Any] | None, last: bool = True) -> dict[str, Any] | None:
        """The run ended: its connection to the login node is closed (a later run opens a new one)."""
        result = super().run_ended(result, last)
        self.login.close()
        return result

    # ------------------------------------------------------------------ the job
    def _stage(self) -> str:
        request = {"spec": self.spec.to_dict(), "rendezvous_timeout_s": self.rendezvous_timeout_s}
        process = self.login.start(["stage", "--run-id", self.run_id], stdin=json.dumps(request).encode())
        lines = [line for line in process.lines() if line.strip()]
        code = process.wait(timeout=60)
        try:
            return str(json.loads(lines[-1])["path"])
        except (IndexError, ValueError, KeyError, TypeError):
            raise AgentError(f"{self.login.host} could not prepare the job folder: "
                             f"{process.stderr_text().strip() or f'agent exit status {code}'}") from None

    def _after_submit(self, held: list[Event]) -> dict[str, Any]:
        """Wait for the nodes (queued, starting), then follow them; a job that ends before them fails the run."""
        try:
            started = self._wait_for_nodes(held)
        except NeuronBenchError as exc:
            return self._without_nodes(exc)
        if not started:  # cancelled while queued: no node ever ran
            return self._without_nodes(None)
        return super().attach(held, self.rendezvous)

    def _node_dirs(self) -> list[str]:
        runs = os.path.dirname(self.job_dir.rstrip("/"))
        return [f"{runs}/{node.plan.run_id}" for node in self.nodes]

    def _nodes_started(self) -> bool:
        """Every node's run folder has its event log (``_slurm_node`` wrote its hello there)."""
        return self.jobs.all_exist([f"{path}/events.jsonl" for path in self._node_dirs()])

    def _wait_for_nodes(self, held: list[Event]) -> bool:
        """Poll Slurm until every node has started (True) or the run was cancelled first (False).

        While the job waits its state and reason are reported each time they change
        (``queued (Resources)``).  A job that ends before its nodes started raises
        SchedulerError with the job's state and the last line of its output.
        """
        started_nodes = {e.get("node") for e in held if isinstance(e.get("node"), int)}
        if len(started_nodes) == len(self.nodes):
            return True  # a re-attach after every node had started
        said = next((e.get("slurm_state") for e in reversed(held) if e.get("slurm_state")), None)
        lost_since: float | None = None
        unknown = 0  # polls in a row where neither squeue nor scontrol knew the job
        while True:
            if self._detached:
                raise Detached(f"run {self.run_id} (Slurm job {self.job_id}) goes on without this app")
            try:
                state = self.jobs.state(self.job_id)
                self.state = state or self.state
                if state is not None and not state.waiting and self._nodes_started():
                    return True
                lost_since = None
            except ConnectError as exc:
                lost_since = lost_since or time.monotonic()
                if time.monotonic() - lost_since > self.reconnect_for_s:
                    raise ConnectError(f"lost the connection to {self.login.host} while Slurm job {self.job_id} "
                                       f"waited; it goes on: `neuronbench runs attach {self.run_id}` picks it "
                                       f"up") from None
                self._say(f"connection to {self.login.host} lost ({exc}); trying again")
                time.sleep(min(5.0, self.poll_s * 2))
                continue
            if self._cancelled:
                self._scancel()
                if state is None or state.waiting or state.ended:
                    return False
            unknown = unknown + 1 if state is None else 0
            if state is None and unknown < UNKNOWN_POLLS:
                time.sleep(self.poll_s)
                continue
            text = state.describe() if state is not None else "no longer known to Slurm"
            if text != said:
                said = text
                self._emit({"type": "log", "level": "info", "message": f"Slurm job {self.job_id}: {text}",
                            "slurm_state": text, "slurm": {"job_id": self.job_id, "state": state.state if state
                                                           else None, "reason": state.reason if state else None,
                                                           "nodes": state.nodes if state else None}})
                self._say(f"Slurm job {self.job_id}: {text}")
            if state is None or state.ended:
                if self._nodes_started():
                    return True  # it ended after its nodes started: their streams say how
                if self._cancelled or (state is not None and state.state == "CANCELLED"):
                    return False
                tail = self.jobs.output_tail(output_path(self.job_dir, self.job_id))
                last = job_output_reason(tail)
                ended = f"ended {text}" if state is not None else "is no longer known to Slurm"
                raise SchedulerError(f"Slurm job {self.job_id} {ended} before the agent started on every node: "
                                     f"{last}", detail=tail)
            time.sleep(self.poll_s)

    def _without_nodes(self, error: NeuronBenchError | None) -> dict[str, Any]:
        """The run's Result when its nodes never ran (cancelled while queued, or the job failed to start)."""
        if error is not None:
            for node in self.nodes:
                node.outcome.error = {"kind": type(error).__name__, "message": str(error)}
            self._culprit = 0
            self._emit({"type": "error", "kind": "runtime", "message": str(error), "detail": error.detail or ""})
        result = self._merged()
        if error is not None:
            result["error"] = {"kind": type(error).__name__, "message": str(error), "detail": error.detail or ""}
        self._emit({"type": "result", "result": result})
        self._emit({"type": "end", "status": result["status"]})
        return result

    def _merged(self) -> dict[str, Any]:
        result = super()._merged()
        result["host"] = self.login.host
        result["slurm"] = {"job_id": self.job_id, "state": self.state.state if self.state else None,
                           "nodes": self.state.nodes if self.state else None}
        return result

    # ------------------------------------------------------------------ cancelling
    def _cancel_nodes(self, except_node) -> None:
        """A node failed (or the user cancelled): Slurm stops the whole job, every node at once."""
        self._scancel()

    def _scancel(self) -> None:
        with self._lock:
            due = bool(self.job_id) and not self._scancel_sent
            self._scancel_sent = self._scancel_sent or due
        if not due:
            return

        def send() -> None:
            try:
                self.jobs.cancel(self.job_id)
                self._say(f"scancel {self.job_id}: Slurm stops the job on every node")
            except NeuronBenchError as exc:
                with self._lock:
                    self._scancel_sent = False  # try again on the next chance
                self._say(f"could not cancel Slurm job {self.job_id}: {exc}")

        threading.Thread(target=send, name=f"scancel-{self.job_id}", daemon=True).start()
