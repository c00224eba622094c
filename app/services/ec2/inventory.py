"""The instances NeuronBench owns in a region (`ec2 list`, `ec2 cleanup`, the app's start), and importing others.

Owned means tagged ``neuronbench:owner`` with this user@computer: another user's
benchmarks on the same account are theirs to clean up.  An instance a live run
holds (``InstanceHolds``) is never offered for cleanup.
"""
from __future__ import annotations

import re
import time
from dataclasses import asdict, dataclass
from typing import Any

from app.core.ec2_cost import usd_so_far
from app.core.ec2_launch import TAG_HOST, TAG_MAX_MINUTES, TAG_OWNER, TAG_RUN_ID
from app.core.errors import BadSpecError, NeuronBenchError
from app.core.hosts import HostProfile
from app.core.pricebook import PriceBook
from app.paths import AppPaths
from app.services.ec2.aws import AwsClients, boto3_module, explain, is_aws_error
from app.services.ec2.holds import InstanceHolds
from app.services.ec2.instances import LIVE_STATES, owner_tag
from app.services.hosts_store import HostsStore
from app.services.pricing import load_pricebook

_NAME_CHARS = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class OwnedInstance:
    """One instance NeuronBench launched, as `ec2 list` shows it."""

    instance_id: str
    region: str
    instance_type: str
    state: str
    launched_at: float  # unix seconds, from AWS's LaunchTime
    market: str
    run_id: str
    host: str
    owner: str
    max_minutes: int | None
    held: bool = False  # a live run uses it now
    usd_per_hour: float | None = None
    usd_so_far: float | None = None

    def age_s(self, now: float | None = None) -> float:
        return max(0.0, (now or time.time()) - self.launched_at)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _tags(instance: dict[str, Any]) -> dict[str, str]:
    return {t["Key"]: t["Value"] for t in instance.get("Tags") or []}


def _described(clients: AwsClients, filters: list[dict[str, Any]], doing: str) -> list[dict[str, Any]]:
    try:
        pages = clients.ec2.get_paginator("describe_instances").paginate(Filters=filters)
        return [i for page in pages for r in page.get("Reservations", []) for i in r.get("Instances", [])]
    except Exception as exc:
        if is_aws_error(exc):
            raise explain(exc, doing) from None
        raise


def owned_instances(clients: AwsClients, holds: InstanceHolds | None = None, book: PriceBook | None = None,
                    owner: str | None = None, now: float | None = None) -> list[OwnedInstance]:
    """This user's NeuronBench instances in the region that are not terminated, oldest first, priced."""
    owner = owner or owner_tag()
    found = _described(clients, [{"Name": f"tag:{TAG_OWNER}", "Values": [owner]},
                                 {"Name": "instance-state-name", "Values": list(LIVE_STATES)}],
                       f"listing NeuronBench's instances in {clients.region}")
    now = now or time.time()
    out = []
    for instance in found:
        tags = _tags(instance)
        market = "spot" if instance.get("InstanceLifecycle") == "spot" else "on_demand"
        launched = instance.get("LaunchTime")
        max_minutes = tags.get(TAG_MAX_MINUTES, "")
        owned = OwnedInstance(
            instance_id=instance["InstanceId"], region=clients.region, instance_type=instance["InstanceType"],
            state=instance["State"]["Name"], launched_at=launched.timestamp() if launched else now, market=market,
            run_id=tags.get(TAG_RUN_ID, ""), host=tags.get(TAG_HOST, ""), owner=tags.get(TAG_OWNER, ""),
            max_minutes=int(max_minutes) if max_minutes.isdigit() else None,
            held=bool(holds and holds.is_held(instance["InstanceId"])))
        if book is not None:
            owned.usd_per_hour = book.price(owned.instance_type, owned.region, market).usd_per_hour
            if owned.state in ("pending", "running"):  # a stopped instance bills its disks only
                owned.usd_so_far = usd_so_far(owned.launched_at, now, owned.usd_per_hour)
        out.append(owned)
    return sorted(out, key=lambda o: o.launched_at)


def terminate_instances(clients: AwsClients, instance_ids: list[str]) -> None:
    if not instance_ids:
        return
    try:
        clients.ec2.terminate_instances(InstanceIds=instance_ids)
    except Exception as exc:
        if is_aws_error(exc):
            raise explain(exc, f"terminating {', '.join(instance_ids)}") from None
        raise


def _login_user(clients: AwsClients, image_ids: set[str]) -> dict[str, str]:
    """The usual login per image: ``ubuntu`` on Ubuntu images, ``ec2-user`` on Amazon Linux ('' when unknown)."""
    if not image_ids:
        return {}
    try:
        images = clients.ec2.describe_images(ImageIds=sorted(image_ids)).get("Images", [])
    except Exception as exc:
        if is_aws_error(exc):
            return {}
        raise
    users = {}
    for image in images:
        name = (image.get("Name") or "").lower() + " " + (image.get("Description") or "").lower()
        users[image["ImageId"]] = "ubuntu" if "ubuntu" in name else "ec2-user" if ("amzn" in name or
                                                                                 "amazon linux" in name) else ""
    return users


def parse_tag_filters(pairs: list[str]) -> list[dict[str, Any]]:
    """``--tag K=V`` as DescribeInstances filters (``K=`` or ``K`` alone: the tag is set, to anything)."""
    filters = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not key:
            raise BadSpecError(f"--tag {pair!r} must be KEY=VALUE (or KEY)")
        filters.append({"Name": f"tag:{key}", "Values": [value]} if sep and value else
                       {"Name": "tag-key", "Values": [key]})
    return filters


def running_hosts(clients: AwsClients, tags: list[str] | None = None,
                  identity_file: str = "") -> list[HostProfile]:
    """Running instances of the region as SSH host profiles, with their type and region filled in (priced).

    The address is the public DNS name, else the public address, else the private one (reachable
    through a VPN or a jump host); the name is the instance's ``Name`` tag, else its id.
    """
    filters = [{"Name": "instance-state-name", "Values": ["running"]}, *parse_tag_filters(tags or [])]
    found = _described(clients, filters, f"listing the running instances in {clients.region}")
    users = _login_user(clients, {i.get("ImageId", "") for i in found if i.get("ImageId")})
    profiles = []
    for instance in found:
        address = instance.get("PublicDnsName") or instance.get("PublicIpAddress") or \
            instance.get("PrivateIpAddress") or ""
        if not address:
            continue
        name = _NAME_CHARS.sub("-", _tags(instance).get("Name", "")).strip("-.") or instance["InstanceId"]
        if name.startswith("-") or name == "local":
            name = instance["InstanceId"]
        profiles.append(HostProfile(name=name[:100], hostname=address, user=users.get(instance.get("ImageId"), ""),
                                    identity_file=identity_file, instance_type=instance["InstanceType"],
                                    region=clients.region))
    return profiles


def require_region(region: str | None, fallback: list[str]) -> list[str]:
    """The regions to look in: ``--region``, else those of the saved --ec2 hosts, else AWS's configured one."""
    if region:
        return [region]
    if fallback:
        return sorted(set(fallback))
    configured = boto3_module().session.Session().region_name
    if not configured:
        raise BadSpecError("say which region to look in: --region R (or set AWS_DEFAULT_REGION)")
    return [configured]


def import_running(store: HostsStore, clients: AwsClients, tags: list[str] | None = None,
                   identity_file: str = "") -> tuple[list[HostProfile], list[str]]:
    """Save the region's running instances as SSH hosts: (added, skipped with reasons)."""
    existing = set(store.names())
    added, skipped = [], []
    for profile in running_hosts(clients, tags, identity_file):
        if profile.name in existing:
            skipped.append(f"{profile.name}: a host of that name exists already")
            continue
        store.add(profile)
        existing.add(profile.name)
        added.append(profile)
    return added, skipped


def owned_in_saved_regions(paths: AppPaths, now: float | None = None) -> list[OwnedInstance]:
    """This user's instances in every region a saved --ec2 host launches in (none saved: [] without asking AWS).

    Raises CloudError (no boto3, no credentials, no network) for the caller to stay quiet about.
    """
    regions = sorted({p.ec2.region for p in HostsStore(paths.config).list() if p.ec2 is not None})
    if not regions:
        return []
    try:
        book: PriceBook | None = load_pricebook(paths)
    except NeuronBenchError:
        book = None
    holds = InstanceHolds(paths.data)
    found: list[OwnedInstance] = []
    for region in regions:
        found += owned_instances(AwsClients(region), holds, book, now=now)
    return found


def terminate_owned(instances: list[OwnedInstance], paths: AppPaths) -> list[str]:
    """Terminate these instances (grouped by region) and forget their holds; returns their ids."""
    holds = InstanceHolds(paths.data)
    by_region: dict[str, list[str]] = {}
    for o in instances:
        by_region.setdefault(o.region, []).append(o.instance_id)
    for region, ids in by_region.items():
        terminate_instances(AwsClients(region), ids)
        for instance_id in ids:
            holds.forget(instance_id=instance_id)
    return [o.instance_id for o in instances]
