"""A Slurm cluster's login node as a host: how its jobs are submitted, and what Slurm says about a job.

A host profile with ``slurm`` set is the SSH login (head) node of a Slurm
cluster.  A run there is one batch job (``sbatch``) of N nodes whose ``srun``
starts the agent on every node; Slurm allocates, NeuronBench schedules nothing
(DESIGN.md §9).  Pure: no I/O.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from app.core.cluster import declared_multinode_problem
from app.core.errors import BadSpecError
from app.core.specs import build_spec
from remote_agent.protocol import RunSpec

# squeue/scontrol job states (JOB STATE CODES in squeue(1)).
WAITING_STATES = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD",
                            "SUSPENDED", "STOPPED"})
ENDED_STATES = frozenset({"BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL",
                          "OUT_OF_MEMORY", "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT"})
MAX_TIME_MINUTES = 366 * 24 * 60
_NAME = re.compile(r"^[A-Za-z0-9_.+-]{1,100}$")  # partition and account names, as sites name them


def _help(text: str, flag: str) -> dict[str, str]:
    return {"help": text, "flag": flag}


@dataclass(frozen=True)
class SlurmSettings:
    """How runs on a Slurm login node are submitted (the ``--slurm`` part of a host profile)."""

    partition: str = field(default="", metadata=_help(
        "Slurm partition to submit to (default: the cluster's default partition)", "--partition"))
    account: str = field(default="", metadata=_help("Slurm account to charge (default: yours)", "--account"))
    time_minutes: int = field(default=0, metadata=_help(
        "the job's time limit in minutes (default: the partition's)", "--time"))
    exclusive: bool = field(default=False, metadata=_help(
        "ask for whole nodes (sbatch --exclusive): no other job shares them during the benchmark", "--exclusive"))

    def __post_init__(self) -> None:
        for name in ("partition", "account"):
            value = getattr(self, name)
            if not isinstance(value, str) or (value and not _NAME.match(value)):
                raise BadSpecError(f"--{name} {value!r}: a Slurm {name} name is letters, digits and . _ + -")
        minutes = self.time_minutes
        if isinstance(minutes, bool) or not isinstance(minutes, int) or not 0 <= minutes <= MAX_TIME_MINUTES:
            raise BadSpecError(f"--time {minutes!r}: give the job's time limit in whole minutes "
                               f"(1 to {MAX_TIME_MINUTES}), or leave it out for the partition's")
        if not isinstance(self.exclusive, bool):
            raise BadSpecError("--exclusive is on or off")

    def describe(self) -> str:
        """``partition bench, account a1, 30 min, exclusive`` (what is set), or ``defaults``."""
        parts = [f"partition {self.partition}" if self.partition else "",
                 f"account {self.account}" if self.account else "",
                 f"{self.time_minutes} min" if self.time_minutes else "",
                 "exclusive" if self.exclusive else ""]
        return ", ".join(p for p in parts if p) or "the cluster's defaults"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> SlurmSettings:
        if not isinstance(data, dict):
            raise BadSpecError("slurm must be a JSON object of partition, account, time_minutes, exclusive")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise BadSpecError(f"slurm: unknown field(s) {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def field_help(cls) -> dict[str, dict[str, str]]:
        return {f.name: dict(f.metadata) for f in fields(cls)}


@dataclass(frozen=True)
class JobState:
    """What Slurm says of a job: its state (``PENDING``, ``RUNNING``, ...) and the reason it gives."""

    job_id: str
    state: str
    reason: str = ""
    nodes: str = ""  # the allocation's node list, once it has one

    @property
    def waiting(self) -> bool:
        return self.state in WAITING_STATES

    @property
    def ended(self) -> bool:
        return self.state in ENDED_STATES

    def describe(self) -> str:
        """``queued (Resources)`` while the job waits, else the state in lower case (``running``)."""
        if self.state == "PENDING":
            return f"queued ({self.reason})" if self.reason and self.reason != "None" else "queued"
        text = self.state.lower().replace("_", " ")
        return f"{text} ({self.reason})" if self.reason and self.reason != "None" and not self.ended else text


SQUEUE_FORMAT = "%i|%T|%r|%N"


def parse_squeue(job_id: str, text: str) -> JobState | None:
    """The job's line of ``squeue -h -j ID -o SQUEUE_FORMAT`` (None: the job has left squeue)."""
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 3 and parts[0].strip() == job_id:
            return JobState(job_id, parts[1].strip().upper(), parts[2].strip(),
                            parts[3].strip() if len(parts) > 3 else "")
    return None


def parse_scontrol_job(job_id: str, text: str) -> JobState | None:
    """``scontrol show job ID`` (``JobState=FAILED Reason=... NodeList=...``), for a job gone from squeue."""
    values = dict(re.findall(r"(?:^|\s)(\w+)=(\S*)", text))
    state = values.get("JobState")
    if not state:
        return None
    nodes = values.get("NodeList", "")
    return JobState(job_id, state.upper(), values.get("Reason", ""), "" if nodes == "(null)" else nodes)


def slurm_spec(spec: RunSpec, host: str, instance_type: str, nnodes: int | None) -> RunSpec:
    """The run's spec on the Slurm host named ``host`` (declared ``instance_type``): a training on ``nnodes`` nodes.

    It takes the profile's name and type, not the profile: host profiles hold Slurm settings, so this
    module sits below ``app.core.hosts`` and must not import it.
    """
    if spec.workload != "train":
        raise BadSpecError(f"{host} is a Slurm login node: it runs one training across --nnodes N nodes; "
                           f"run inference on a node added as an SSH host")
    if nnodes is None or nnodes < 2:
        raise BadSpecError(f"{host} is a Slurm login node: say on how many nodes to train with --nnodes N "
                           f"(2 or more)")
    problem = declared_multinode_problem(nnodes, spec.backend, [instance_type])
    if problem:
        raise BadSpecError(problem)
    return build_spec(spec, nnodes=nnodes)


def refusal_sentence(stderr: str, partition: str = "") -> str:
    """Slurm's own reason for refusing a job, as one sentence (``sbatch: error: ...`` lines, last one first).

    sbatch says ``error: invalid partition specified: nosuch`` and then ``Batch job
    submission failed: Invalid partition name specified``: both are kept, in that order.
    """
    messages = []
    for line in stderr.splitlines():
        text = re.sub(r"^\s*(sbatch|srun|salloc):\s*", "", line.strip())
        text = re.sub(r"^error:\s*", "", text)
        if text and text not in messages:
            messages.append(text)
    said = "; ".join(messages[-2:]) if messages else "it gave no reason"
    where = f" on partition {partition}" if partition else ""
    return f"Slurm refused the job{where}: {said}"
