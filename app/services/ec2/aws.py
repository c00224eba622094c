"""boto3 for EC2 work: clients for one region, and AWS's refusals turned into one sentence each.

boto3 is an optional extra, imported here (and in the price refresh) only, inside
functions: the app runs without it and says what to install when an EC2 feature
is used.  ``AWS_ENDPOINT_URL`` (botocore's own setting) points every client at
another endpoint, which is how the tests reach a local moto server.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from app.core.ec2_launch import Ec2Launch, quota_for
from app.core.errors import CloudError

_NO_CREDENTIALS = ("NoCredentialsError", "PartialCredentialsError", "NoAuthTokenError", "NoRegionError")
_QUOTA_CODES = ("VcpuLimitExceeded", "InstanceLimitExceeded", "MaxSpotInstanceCountExceeded")
_NEEDS = ("the credentials need ec2:RunInstances, ec2:CreateTags, ec2:DescribeInstances, ec2:TerminateInstances, "
          "ec2:GetConsoleOutput, ec2:DescribeInstanceTypeOfferings and ssm:GetParameter")


def boto3_module():
    try:
        import boto3  # the optional extra, imported only when an EC2 feature is used
    except ImportError:
        raise CloudError("launching and listing EC2 instances needs boto3: pip install 'neuronbench[aws]' "
                         "(or pip install boto3)") from None
    return boto3


class AwsClients:
    """The clients one region's EC2 work needs, made on first use (short timeouts, few retries)."""

    def __init__(self, region: str) -> None:
        self.region = region
        self._clients: dict[str, Any] = {}
        self._session: Any = None

    def _client(self, service: str) -> Any:
        if service not in self._clients:
            boto3 = boto3_module()
            from botocore.config import Config

            config = Config(connect_timeout=5, read_timeout=30, retries={"max_attempts": 3, "mode": "standard"})
            try:
                # A session of our own: boto3's default one caches credentials for the life of the process
                # (a key rotated, or `aws sso login` run meanwhile, would go unseen by the app).
                if self._session is None:
                    self._session = boto3.session.Session(region_name=self.region)
                self._clients[service] = self._session.client(service, config=config)
            except Exception as exc:
                raise explain(exc, f"connecting to AWS in {self.region}") from None
        return self._clients[service]

    @property
    def ec2(self) -> Any:
        return self._client("ec2")

    @property
    def ssm(self) -> Any:
        return self._client("ssm")


def is_aws_error(exc: BaseException) -> bool:
    """A botocore exception (a refusal, no credentials, no network), as opposed to a bug of ours."""
    return any(cls.__module__.startswith("botocore") for cls in type(exc).__mro__)


def error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Code", ""))
    return type(exc).__name__


def _message(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        return str(response.get("Error", {}).get("Message", "")) or str(exc)
    return str(exc)


def explain(exc: BaseException, doing: str, launch: Ec2Launch | None = None,
            zones: Sequence[str] | None = None) -> CloudError:
    """One sentence, saying what to do, for a botocore failure while ``doing``.

    ``launch`` names what was being launched (for quota, capacity and key-pair
    refusals); ``zones`` are the availability zones that offer its type (for
    InsufficientInstanceCapacity).
    """
    name = type(exc).__name__
    detail = f"{name}: {exc}"
    if name in _NO_CREDENTIALS:
        return CloudError(f"no AWS credentials found while {doing}: configure them (`aws configure`, AWS_PROFILE, "
                          f"or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) and try again", detail, name)
    code, message = error_code(exc), _message(exc)
    if not isinstance(getattr(exc, "response", None), dict):
        return CloudError(f"cannot reach AWS while {doing}: {exc}; check your network (and any proxy)", detail,
                          name)
    region = launch.region if launch else ""
    if launch is not None and code in _QUOTA_CODES:
        quota, quota_code = quota_for(launch.instance_type, launch.spot)
        limit = re.search(r"limit of (\d+)", message)
        now = f" is {limit.group(1)} vCPUs" if limit else " is too low"
        where = f" ({quota_code})" if quota_code else ""
        return CloudError(
            f"your account may not run {launch.instance_type} in {region}: the Service Quotas quota "
            f"\"{quota}\"{where}{now}; ask for more vCPUs in the Service Quotas console (Amazon EC2, "
            f"\"{quota}\", region {region}) and run again once AWS grants it", detail, code)
    if launch is not None and code in ("InsufficientInstanceCapacity", "InsufficientCapacity",
                                       "SpotMaxPriceTooLow", "InsufficientSpotCapacity"):
        others = ", ".join(zones or [])
        where = (f"; these zones offer {launch.instance_type}: {others} (choose one with --subnet in that zone)"
                 if others else "")
        if launch.spot:
            return CloudError(f"AWS has no spot capacity for {launch.instance_type} in {region} right now: run "
                              f"without --spot (on-demand), or try again later{where}", detail, code)
        return CloudError(f"AWS has no {launch.instance_type} capacity in the zone it tried in {region} right now: "
                          f"try again later or in another zone{where}", detail, code)
    if code == "InvalidKeyPair.NotFound" and launch is not None:
        return CloudError(
            f"there is no EC2 key pair named {launch.key_name!r} in {region}: import your public key there "
            f"(`aws ec2 import-key-pair --region {region} --key-name {launch.key_name} --public-key-material "
            f"fileb://~/.ssh/id_ed25519.pub`) or give the name of an existing one with --key-name", detail, code)
    if code in ("AuthFailure", "UnrecognizedClientException", "InvalidClientTokenId", "SignatureDoesNotMatch",
                "ExpiredToken", "RequestExpired"):
        return CloudError(f"AWS did not accept your credentials while {doing} ({code}): refresh them "
                          f"(`aws sso login`, or new access keys) and try again", detail, code)
    if "UnauthorizedOperation" in code or "AccessDenied" in code:
        return CloudError(f"AWS refused {doing} ({code}); {_NEEDS}", detail, code)
    if code == "OptInRequired":
        return CloudError(f"region {region or '?'} is not enabled for your account: enable it in the AWS console "
                          f"(Account, AWS Regions) or choose another --region", detail, code)
    return CloudError(f"AWS answered {code} while {doing}: {message}", detail, code)
