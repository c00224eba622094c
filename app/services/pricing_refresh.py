"""``prices refresh``: current on-demand and spot prices from AWS (boto3, an optional extra).

* On-demand: the Price List Query API (``pricing`` client, served from us-east-1
  whatever region is priced), ``get_products`` with the filters that select a
  Linux, shared-tenancy, no-preinstalled-software, on-demand hourly price.
* Spot: EC2 ``describe_spot_price_history`` per region with ``StartTime=now``
  (AWS then returns the price in effect now for each availability zone); the
  lowest over the region's standard AZs, Local Zones left out, as in the snapshot.

boto3 is imported here only, and only when a refresh runs, so the app works
without it.  A type AWS lists no price for becomes an entry without a price
("no public on-demand price"), never 0.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.core.errors import NeuronBenchError
from app.core.pricebook import PriceEntry

PRICING_API_REGION = "us-east-1"
ON_DEMAND_SOURCE = "AWS Price List API (pricing.get_products)"
SPOT_SOURCE = "EC2 describe_spot_price_history (lowest standard AZ)"
_NEEDS = "the credentials need pricing:GetProducts and ec2:DescribeSpotPriceHistory"

# The Price List API names regions by their console "location".  Regions not listed
# here are matched with the ``regionCode`` attribute instead.
LOCATIONS = {
    "us-east-1": "US East (N. Virginia)", "us-east-2": "US East (Ohio)",
    "us-west-1": "US West (N. California)", "us-west-2": "US West (Oregon)",
    "ca-central-1": "Canada (Central)", "sa-east-1": "South America (Sao Paulo)",
    "eu-west-1": "EU (Ireland)", "eu-west-2": "EU (London)", "eu-west-3": "EU (Paris)",
    "eu-central-1": "EU (Frankfurt)", "eu-north-1": "EU (Stockholm)", "eu-south-1": "EU (Milan)",
    "ap-south-1": "Asia Pacific (Mumbai)", "ap-northeast-1": "Asia Pacific (Tokyo)",
    "ap-northeast-2": "Asia Pacific (Seoul)", "ap-southeast-1": "Asia Pacific (Singapore)",
    "ap-southeast-2": "Asia Pacific (Sydney)",
}
_REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d$")


@dataclass
class RefreshOutcome:
    entries: list[PriceEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _boto3():
    try:
        import boto3  # the optional extra, imported only for a refresh
    except ImportError:
        raise NeuronBenchError("refreshing prices needs boto3: pip install 'neuronbench[aws]' "
                               "(or pip install boto3)") from None
    return boto3


def _client_config():
    from botocore.config import Config

    # Short timeouts and few retries: a blocked network fails in seconds, not minutes.
    return Config(connect_timeout=5, read_timeout=20, retries={"max_attempts": 2, "mode": "standard"})


def default_clients() -> tuple[Any, Callable[[str], Any]]:
    """The real ``pricing`` client and a factory for per-region ``ec2`` clients."""
    boto3 = _boto3()
    config = _client_config()
    return (boto3.client("pricing", region_name=PRICING_API_REGION, config=config),
            lambda region: boto3.client("ec2", region_name=region, config=config))


_NO_CREDENTIALS = ("NoCredentialsError", "PartialCredentialsError", "NoAuthTokenError")


def _explain(exc: Exception, doing: str) -> NeuronBenchError:
    """One sentence for a botocore failure."""
    name = type(exc).__name__
    if name in _NO_CREDENTIALS:
        return NeuronBenchError(f"no AWS credentials found while {doing}: configure them (`aws configure`, "
                                f"AWS_PROFILE or AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY); {_NEEDS}")
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        err = response.get("Error", {})
        code, message = err.get("Code", name), err.get("Message", str(exc))
        if "AccessDenied" in code or "Unauthorized" in code:
            return NeuronBenchError(f"AWS refused {doing} ({code}: {message}); {_NEEDS}")
        return NeuronBenchError(f"AWS answered {code} while {doing}: {message}")
    return NeuronBenchError(f"cannot reach AWS while {doing}: {exc}")


def _is_botocore_error(exc: Exception) -> bool:
    return any(cls.__module__.startswith("botocore") for cls in type(exc).__mro__)


def _filters(instance_type: str, region: str) -> list[dict[str, str]]:
    def term(field_name: str, value: str) -> dict[str, str]:
        return {"Type": "TERM_MATCH", "Field": field_name, "Value": value}

    where = term("location", LOCATIONS[region]) if region in LOCATIONS else term("regionCode", region)
    return [term("instanceType", instance_type), where, term("operatingSystem", "Linux"),
            term("tenancy", "Shared"), term("preInstalledSw", "NA"), term("capacitystatus", "Used")]


def hourly_on_demand_prices(price_list: Iterable[str]) -> set[float]:
    """Distinct non-zero USD-per-hour figures in ``get_products``' PriceList (JSON strings)."""
    found: set[float] = set()
    for item in price_list:
        product = json.loads(item)
        for term in (product.get("terms") or {}).get("OnDemand", {}).values():
            for dim in (term.get("priceDimensions") or {}).values():
                usd = (dim.get("pricePerUnit") or {}).get("USD")
                if usd is None or not str(dim.get("unit", "")).lower().startswith("hr"):
                    continue
                value = float(usd)
                if value > 0:
                    found.add(value)
    return found


def fetch_on_demand(pricing: Any, instance_type: str, region: str, stamp: str, outcome: RefreshOutcome) -> None:
    price_list: list[str] = []
    kwargs: dict[str, Any] = {"ServiceCode": "AmazonEC2", "Filters": _filters(instance_type, region),
                              "FormatVersion": "aws_v1", "MaxResults": 100}
    while True:
        page = pricing.get_products(**kwargs)
        price_list.extend(page.get("PriceList", []))
        if not page.get("NextToken"):
            break
        kwargs["NextToken"] = page["NextToken"]
    values = hourly_on_demand_prices(price_list)
    if len(values) > 1:
        listed = ", ".join(f"{v:g}" for v in sorted(values))
        outcome.problems.append(f"{instance_type} in {region}: the Price List API gave several on-demand prices "
                                f"({listed}); kept the earlier price")
        return
    outcome.entries.append(PriceEntry(instance_type, region, "on_demand", values.pop() if values else None,
                                      ON_DEMAND_SOURCE, stamp, "aws-api"))


def is_standard_az(zone: str, region: str) -> bool:
    """``us-east-1a`` is; the Local Zone ``us-east-1-atl-2a`` is not."""
    return zone[:-1] == region and zone[-1:].isalpha()


def fetch_spot(ec2: Any, instance_types: Sequence[str], region: str, now: _dt.datetime, stamp: str,
               outcome: RefreshOutcome) -> None:
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    kwargs: dict[str, Any] = {"InstanceTypes": list(instance_types), "ProductDescriptions": ["Linux/UNIX"],
                              "StartTime": now}
    while True:
        page = ec2.describe_spot_price_history(**kwargs)
        for record in page.get("SpotPriceHistory", []):
            key = (record["InstanceType"], record["AvailabilityZone"])
            if key not in latest or record["Timestamp"] > latest[key]["Timestamp"]:
                latest[key] = record
        if not page.get("NextToken"):
            break
        kwargs["NextToken"] = page["NextToken"]
    for itype in instance_types:
        prices = [float(r["SpotPrice"]) for (t, zone), r in latest.items()
                  if t == itype and is_standard_az(zone, region)]
        outcome.entries.append(PriceEntry(itype, region, "spot", min(prices) if prices else None, SPOT_SOURCE,
                                          stamp, "aws-api"))


def refresh(instance_types: Sequence[str], regions: Sequence[str], pricing: Any = None,
            ec2_for: Callable[[str], Any] | None = None, now: _dt.datetime | None = None,
            progress: Callable[[str], None] | None = None) -> RefreshOutcome:
    """Fetch on-demand and spot prices for every type in every region.

    ``pricing`` / ``ec2_for`` default to real boto3 clients (tests pass stubbed
    ones).  A failure in one region (an opt-in region not enabled) is reported and
    the others carry on; a failure of credentials stops the refresh with one sentence.
    """
    bad = [r for r in regions if not _REGION.match(r)]
    if bad:
        raise NeuronBenchError(f"{bad[0]!r} is not an AWS region code (e.g. us-east-1)")
    if pricing is None or ec2_for is None:
        default_pricing, default_ec2 = default_clients()
        pricing = pricing or default_pricing
        ec2_for = ec2_for or default_ec2
    now = now or _dt.datetime.now(_dt.timezone.utc)
    stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
    outcome = RefreshOutcome()
    for region in regions:
        if progress:
            progress(f"{region}: on-demand prices for {len(instance_types)} type(s) …")
        for itype in instance_types:
            try:
                fetch_on_demand(pricing, itype, region, stamp, outcome)
            except Exception as exc:
                if not _is_botocore_error(exc):
                    raise
                raise _explain(exc, f"reading on-demand prices ({itype}, {region})") from None
        if progress:
            progress(f"{region}: spot prices …")
        try:
            fetch_spot(ec2_for(region), instance_types, region, now, stamp, outcome)
        except Exception as exc:
            if not _is_botocore_error(exc):
                raise
            error = _explain(exc, f"reading spot prices in {region}")
            if type(exc).__name__ in _NO_CREDENTIALS:
                raise error from None
            outcome.problems.append(str(error))  # e.g. an opt-in region not enabled: the others go on
    return outcome
