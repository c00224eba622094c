"""How to launch an EC2 instance for a benchmark: the ``--ec2`` part of a host profile, and facts per family.

Pure: which public AMI a family boots (the SSM parameter AWS publishes for it),
which Service Quotas quota limits it, and who logs in.  The AWS calls are in
``app.services.ec2``.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from app.core.errors import BadSpecError

# The tags every instance NeuronBench launches carries: how `ec2 list` and `ec2 cleanup` find them.
TAG_RUN_ID = "neuronbench:run-id"
TAG_OWNER = "neuronbench:owner"
TAG_HOST = "neuronbench:host"
TAG_MAX_MINUTES = "neuronbench:max-minutes"

MAX_MINUTES_LIMIT = 7 * 24 * 60  # a week: anything longer is a typo, not a benchmark
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")
_AMI = re.compile(r"^ami-[0-9a-f]{8,17}$")
_SUBNET = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_GROUP = re.compile(r"^sg-[0-9a-f]{8,17}$")
_KEY_NAME = re.compile(r"^[\x20-\x7e]{1,255}$")

# Public SSM parameters that always name the newest image (DLAMI and Canonical documentation):
# the Neuron multi-framework DLAMI (its /opt/aws_neuronx_venv_pytorch_* venvs are what the agent looks for),
# the GPU DLAMI with the NVIDIA driver and the PyTorch the agent pins, and plain Ubuntu for CPU types.
AMI_PARAMETERS = {
    "neuron": "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id",
    "gpu": "/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.9-ubuntu-24.04/latest/ami-id",
    "cpu": "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id",
    "cpu-arm64": "/aws/service/canonical/ubuntu/server/24.04/stable/current/arm64/hvm/ebs-gp3/ami-id",
}
LOGIN_USER = "ubuntu"  # all three images are Ubuntu

# EC2 Service Quotas that cap running vCPUs per family (name, code): what a "0 vCPU" refusal is about.
ON_DEMAND_QUOTAS = {
    "trn": ("Running On-Demand Trn instances", "L-2C3B7624"),
    "inf": ("Running On-Demand Inf instances", "L-1945791B"),
    "g": ("Running On-Demand G and VT instances", "L-DB2E81BA"),
    "vt": ("Running On-Demand G and VT instances", "L-DB2E81BA"),
    "p": ("Running On-Demand P instances", "L-417A185B"),
    "standard": ("Running On-Demand Standard (A, C, D, H, I, M, R, T, Z) instances", "L-1216C47A"),
}
SPOT_QUOTAS = {
    "trn": "All Trn Spot Instance Requests",
    "inf": "All Inf Spot Instance Requests",
    "g": "All G and VT Spot Instance Requests",
    "vt": "All G and VT Spot Instance Requests",
    "p": "All P Spot Instance Requests",
    "standard": "All Standard (A, C, D, H, I, M, R, T, Z) Spot Instance Requests",
}


def family_letters(instance_type: str) -> str:
    """``trn1.2xlarge`` -> ``trn``, ``g5.xlarge`` -> ``g``, ``c7g.large`` -> ``c``."""
    match = re.match(r"[a-z]+", instance_type)
    return match.group(0) if match else ""


def family_kind(instance_type: str) -> str:
    """``neuron`` (trn*, inf*), ``gpu`` (g*, p*) or ``cpu``: which image the instance boots."""
    letters = family_letters(instance_type)
    if letters in ("trn", "inf"):
        return "neuron"
    if letters in ("g", "p"):
        return "gpu"
    return "cpu"


def is_graviton(instance_type: str) -> bool:
    """c7g, m6gd, t4g: the processor letter ``g`` after the generation digit means Arm (Graviton)."""
    generation = instance_type.split(".", 1)[0]
    return bool(re.match(r"^[a-z]+\d+[a-z]*g[a-z]*$", generation)) and family_kind(instance_type) == "cpu"


def ami_parameter(instance_type: str) -> str:
    """The public SSM parameter holding the AMI to boot ``instance_type`` with."""
    kind = family_kind(instance_type)
    if kind == "gpu" and is_graviton_gpu(instance_type):
        raise BadSpecError(f"{instance_type} is an Arm GPU instance, for which NeuronBench knows no default "
                           f"image: give one with --ami")
    if kind == "cpu" and is_graviton(instance_type):
        return AMI_PARAMETERS["cpu-arm64"]
    return AMI_PARAMETERS[kind]


def is_graviton_gpu(instance_type: str) -> bool:
    """g5g: Graviton with NVIDIA GPUs (the x86_64 DLAMI does not boot there)."""
    generation = instance_type.split(".", 1)[0]
    return family_kind(instance_type) == "gpu" and generation.endswith("g")


def quota_for(instance_type: str, spot: bool) -> tuple[str, str]:
    """(quota name, quota code or "") limiting how many vCPUs of this family may run."""
    letters = family_letters(instance_type)
    key = letters if letters in ON_DEMAND_QUOTAS else "standard"
    if spot:
        return SPOT_QUOTAS[key], ""
    return ON_DEMAND_QUOTAS[key]


def _help(text: str, flag: str) -> dict[str, str]:
    return {"help": text, "flag": flag}


@dataclass(frozen=True)
class Ec2Launch:
    """How NeuronBench launches the instance a run needs (it exists only while a run needs it)."""

    instance_type: str = field(metadata=_help("EC2 instance type to launch, e.g. trn1.2xlarge", "--instance-type"))
    region: str = field(metadata=_help("AWS region to launch in, e.g. us-east-1", "--region"))
    key_name: str = field(metadata=_help("EC2 key pair the instance is started with (its private key is "
                                         "--identity)", "--key-name"))
    spot: bool = field(default=False, metadata=_help("launch a spot instance (cheaper; AWS may take it back "
                                                     "mid-run, and the run then ends 'interrupted')", "--spot"))
    subnet: str = field(default="", metadata=_help("subnet to launch in (default: the default VPC's)", "--subnet"))
    security_group: str = field(default="", metadata=_help(
        "security group letting SSH in from here (default: the VPC's default group)", "--security-group"))
    ami: str = field(default="", metadata=_help(
        "image to boot (default: the newest Neuron DLAMI for trn/inf, GPU DLAMI for g/p, Ubuntu for CPU types, "
        "looked up when launching)", "--ami"))
    max_minutes: int = field(default=0, metadata=_help(
        "dead-man switch: the instance shuts itself down (and is terminated) this many minutes after boot "
        "(default: the run's estimate x 2 + 15)", "--max-minutes"))

    def __post_init__(self) -> None:
        def need(ok: bool, message: str) -> None:
            if not ok:
                raise BadSpecError(message)

        need(isinstance(self.instance_type, str) and bool(_INSTANCE_TYPE.match(self.instance_type)),
             f"--instance-type {self.instance_type!r} is not an EC2 instance type (e.g. trn1.2xlarge)")
        need(isinstance(self.region, str) and bool(_REGION.match(self.region)),
             f"--region {self.region!r} is not an AWS region code (e.g. us-east-1)")
        need(isinstance(self.key_name, str) and bool(_KEY_NAME.match(self.key_name)),
             "--key-name must name the EC2 key pair to start the instance with (printable text, 1 to 255 "
             "characters)")
        need(isinstance(self.spot, bool), "spot must be true or false")
        need(not self.ami or bool(_AMI.match(self.ami)), f"--ami {self.ami!r} is not an AMI id (ami-...)")
        need(not self.subnet or bool(_SUBNET.match(self.subnet)),
             f"--subnet {self.subnet!r} is not a subnet id (subnet-...)")
        need(not self.security_group or bool(_GROUP.match(self.security_group)),
             f"--security-group {self.security_group!r} is not a security group id (sg-...)")
        need(isinstance(self.max_minutes, int) and not isinstance(self.max_minutes, bool)
             and 0 <= self.max_minutes <= MAX_MINUTES_LIMIT,
             f"--max-minutes must be between 1 and {MAX_MINUTES_LIMIT} (or 0 for the default), "
             f"not {self.max_minutes!r}")
        if not self.ami:
            ami_parameter(self.instance_type)  # an image NeuronBench cannot pick is said now, not at launch

    @property
    def market(self) -> str:
        """The price book's market for this instance."""
        return "spot" if self.spot else "on_demand"

    def describe(self) -> str:
        """``trn1.2xlarge in us-east-1, spot`` as the host list shows it."""
        return f"{self.instance_type} in {self.region}" + (", spot" if self.spot else "") + ", launched per run"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Ec2Launch:
        if not isinstance(data, dict):
            raise BadSpecError("an ec2 launch setting must be a JSON object")
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise BadSpecError(f"ec2 launch setting: unknown field(s) {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def field_help(cls) -> dict[str, dict[str, str]]:
        return {f.name: dict(f.metadata) for f in fields(cls)}
