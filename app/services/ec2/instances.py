"""EC2 instance calls: launch one with its guards, watch its state, read its console, terminate it.

Every instance is launched with its dead-man switch already in the request:
``InstanceInitiatedShutdownBehavior=terminate`` and a boot script that powers off
``max_minutes`` after boot.  Nothing can fail between launching and arming it.
"""
from __future__ import annotations

import base64
import getpass
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from app.core.ec2_boot import user_data_script
from app.core.ec2_launch import TAG_HOST, TAG_MAX_MINUTES, TAG_OWNER, TAG_RUN_ID, Ec2Launch, ami_parameter
from app.core.errors import CloudError
from app.services.ec2.aws import AwsClients, explain, is_aws_error

LIVE_STATES = ("pending", "running", "stopping", "stopped")
GONE_STATES = ("shutting-down", "terminated")


def owner_tag() -> str:
    """``user@computer``: whose instances `ec2 list` shows and `ec2 cleanup` may terminate."""
    return f"{getpass.getuser()}@{socket.gethostname()}"


@dataclass
class LaunchedInstance:
    """An instance NeuronBench launched (or took over, kept from an earlier run)."""

    instance_id: str
    region: str
    instance_type: str
    ami: str
    ami_parameter: str | None
    market: str
    max_minutes: int
    launched_at: float  # this computer's clock, when run_instances answered (or when a kept one was taken over)
    public_ip: str = ""
    public_dns: str = ""
    terminated_at: float | None = None
    kept: bool = False
    reused: bool = False

    def block(self) -> dict[str, Any]:
        """The Result's ``ec2`` block."""
        return asdict(self)


def _call(what: str, fn: Callable[[], Any], launch: Ec2Launch | None = None,
          zones: Callable[[], list[str]] | None = None) -> Any:
    try:
        return fn()
    except Exception as exc:
        if not is_aws_error(exc):
            raise
        raise explain(exc, what, launch, zones() if zones else None) from None


def resolve_ami(clients: AwsClients, launch: Ec2Launch) -> tuple[str, str | None]:
    """(AMI id, the public SSM parameter it came from, or None for an --ami given by the user)."""
    if launch.ami:
        return launch.ami, None
    name = ami_parameter(launch.instance_type)
    value = _call(f"looking up the image for {launch.instance_type} ({name})",
                  lambda: clients.ssm.get_parameter(Name=name)["Parameter"]["Value"], launch)
    return value, name


def zones_offering(clients: AwsClients, instance_type: str) -> list[str]:
    """Availability zones of the region that offer ``instance_type`` ([] when that cannot be read)."""
    try:
        pages = clients.ec2.get_paginator("describe_instance_type_offerings").paginate(
            LocationType="availability-zone", Filters=[{"Name": "instance-type", "Values": [instance_type]}])
        return sorted({o["Location"] for page in pages for o in page.get("InstanceTypeOfferings", [])})
    except Exception as exc:
        if is_aws_error(exc):
            return []
        raise


def launch_instance(clients: AwsClients, launch: Ec2Launch, *, host: str, run_id: str, max_minutes: int,
                    owner: str | None = None) -> LaunchedInstance:
    """Launch one tagged instance with its dead-man switch; returns as soon as AWS has accepted it (pending)."""
    ami, parameter = resolve_ami(clients, launch)
    tags = [{"Key": TAG_RUN_ID, "Value": run_id}, {"Key": TAG_OWNER, "Value": owner or owner_tag()},
            {"Key": TAG_HOST, "Value": host}, {"Key": TAG_MAX_MINUTES, "Value": str(max_minutes)},
            {"Key": "Name", "Value": f"neuronbench {host} {run_id}"}]
    request: dict[str, Any] = {
        "ImageId": ami, "InstanceType": launch.instance_type, "MinCount": 1, "MaxCount": 1,
        "KeyName": launch.key_name,
        "InstanceInitiatedShutdownBehavior": "terminate",
        "UserData": user_data_script(max_minutes, run_id),
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}, {"ResourceType": "volume", "Tags": tags}],
        "ClientToken": f"neuronbench-{run_id}-{host}"[:64],  # a retried request never launches a second one
    }
    if launch.subnet:
        request["SubnetId"] = launch.subnet
    if launch.security_group:
        request["SecurityGroupIds"] = [launch.security_group]
    if launch.spot:
        request["InstanceMarketOptions"] = {"MarketType": "spot", "SpotOptions": {
            "SpotInstanceType": "one-time", "InstanceInterruptionBehavior": "terminate"}}
    answer = _call(f"launching {launch.instance_type} in {launch.region}",
                   lambda: clients.ec2.run_instances(**request), launch,
                   lambda: zones_offering(clients, launch.instance_type))
    instance = answer["Instances"][0]
    return LaunchedInstance(
        instance_id=instance["InstanceId"], region=launch.region, instance_type=launch.instance_type, ami=ami,
        ami_parameter=parameter, market=launch.market, max_minutes=max_minutes, launched_at=time.time(),
        public_ip=instance.get("PublicIpAddress") or "", public_dns=instance.get("PublicDnsName") or "")


def describe(clients: AwsClients, instance_id: str) -> dict[str, Any] | None:
    """The instance as DescribeInstances shows it (None once AWS has forgotten it)."""
    try:
        answer = clients.ec2.describe_instances(InstanceIds=[instance_id])
    except Exception as exc:
        if is_aws_error(exc) and "InvalidInstanceID" in str(getattr(exc, "response", {}).get("Error", {})):
            return None
        if is_aws_error(exc):
            raise explain(exc, f"reading the state of {instance_id}") from None
        raise
    found = [i for r in answer.get("Reservations", []) for i in r.get("Instances", [])]
    return found[0] if found else None


def state_of(description: dict[str, Any] | None) -> str:
    return (description or {}).get("State", {}).get("Name", "terminated")


def gone_reason(description: dict[str, Any] | None) -> str:
    """Why an instance went away, in AWS's words (a spot interruption says so)."""
    reason = (description or {}).get("StateReason") or {}
    return reason.get("Message") or reason.get("Code") or (description or {}).get("StateTransitionReason") or \
        "no reason given"


def wait_running(clients: AwsClients, instance: LaunchedInstance, timeout_s: float, poll_s: float,
                 stop: Callable[[], bool], on_state: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Poll until the instance runs; fills in its public address.  Raises CloudError if it never does."""
    deadline = time.monotonic() + timeout_s
    seen = ""
    while True:
        description = describe(clients, instance.instance_id)
        state = state_of(description)
        if state != seen and on_state is not None:
            on_state(state)
        seen = state
        if state == "running":
            assert description is not None
            instance.public_ip = description.get("PublicIpAddress") or instance.public_ip
            instance.public_dns = description.get("PublicDnsName") or instance.public_dns
            return description
        if state in GONE_STATES or state in ("stopping", "stopped"):
            raise CloudError(f"instance {instance.instance_id} went to {state} instead of running: "
                             f"{gone_reason(description)}", code=state)
        if stop():
            raise CloudError(f"the launch of {instance.instance_id} was cancelled; it is terminated", code="Cancelled")
        if time.monotonic() > deadline:
            raise CloudError(f"instance {instance.instance_id} was still {state} after {timeout_s / 60:g} min; "
                             f"it is being terminated (try again, or another zone)", code="Timeout")
        time.sleep(poll_s)


def console_output(clients: AwsClients, instance_id: str) -> str:
    """The instance's console text so far ('' when AWS has none yet)."""
    answer = _call(f"reading the console of {instance_id}",
                   lambda: clients.ec2.get_console_output(InstanceId=instance_id, Latest=True))
    text = answer.get("Output") or ""
    try:  # botocore decodes it; older responses and some endpoints hand back the base64
        if text and "\n" not in text:
            text = base64.b64decode(text, validate=True).decode("utf-8", "replace")
    except ValueError:
        pass
    return text


def terminate(clients: AwsClients, instance_id: str) -> None:
    _call(f"terminating {instance_id}", lambda: clients.ec2.terminate_instances(InstanceIds=[instance_id]))
