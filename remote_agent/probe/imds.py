"""Instance type and region from the EC2 instance metadata service (IMDSv2).

The default endpoint is a link-local address that only exists on EC2.  Elsewhere
a request to it hangs until its timeout or, worse, goes to whatever answers on
that network, so the default is used only when the machine says it is EC2.
Tests and unusual setups name the endpoint in ``NEURONBENCH_IMDS_ENDPOINT``.
"""
from __future__ import annotations

import http.client
import os
import socket
import time
import urllib.error
import urllib.request
from typing import Dict, Optional, Tuple

DEFAULT_ENDPOINT = "http://169.254.169.254"
ENDPOINT_ENV = "NEURONBENCH_IMDS_ENDPOINT"
SYSFS_ROOT_ENV = "NEURONBENCH_SYSFS_ROOT"
BUDGET_S = 1.0
TOKEN_TTL_S = 60
# Containers on EC2 reach IMDSv2 only when the instance's hop limit is 2 or more.
_HINT = ("in a container, raise the instance's IMDSv2 hop limit to 2; or declare the type with "
         "`neuronbench hosts add NAME --instance-type T`")


def _read_sys(root: str, relpath: str) -> str:
    try:
        with open(os.path.join(root, relpath), encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def looks_like_ec2(sysfs_root: Optional[str] = None) -> Tuple[bool, str]:
    """Whether DMI or the Xen hypervisor id says this machine is an EC2 instance.

    Args:
        sysfs_root: where sysfs is mounted; ``$NEURONBENCH_SYSFS_ROOT`` or ``/sys`` when None.

    Returns:
        (is_ec2, why): why is a short phrase for the reason shown when it is not EC2.
    """
    root = sysfs_root or os.environ.get(SYSFS_ROOT_ENV) or "/sys"
    vendor = _read_sys(root, "devices/virtual/dmi/id/sys_vendor")
    if vendor == "Amazon EC2":  # Nitro instances
        return True, "DMI vendor is Amazon EC2"
    if _read_sys(root, "devices/virtual/dmi/id/board_asset_tag").startswith("i-"):
        return True, "DMI asset tag is an instance id"
    if _read_sys(root, "hypervisor/uuid").lower().startswith("ec2"):  # older Xen instances
        return True, "Xen hypervisor uuid starts with ec2"
    return False, "DMI vendor is %s" % ("%r, not Amazon EC2" % vendor if vendor else "not Amazon EC2")


def _describe(exc: BaseException, endpoint: str, budget: float) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return "IMDS at %s answered HTTP %d %s" % (endpoint, exc.code, exc.reason)
    reason = getattr(exc, "reason", exc)  # URLError wraps the socket error
    # socket.timeout became an alias of TimeoutError only in Python 3.10: test for both.
    if isinstance(reason, (socket.timeout, TimeoutError)) or isinstance(exc, socket.timeout):
        return "IMDS at %s did not answer within %.1f s (%s)" % (endpoint, budget, _HINT)
    if isinstance(reason, ConnectionRefusedError):
        return "IMDS at %s refused the connection" % endpoint
    return "IMDS at %s could not be reached: %s" % (endpoint, reason)


class _Client:
    """IMDSv2 requests that share one deadline, never through a proxy."""

    def __init__(self, endpoint: str, budget: float) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.budget = budget
        self.deadline = time.monotonic() + budget
        # An HTTP(S)_PROXY in the agent's environment must not see metadata requests.
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def request(self, path: str, method: str = "GET", headers: Optional[Dict[str, str]] = None) -> str:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("time budget spent")
        req = urllib.request.Request(self.endpoint + path, data=b"" if method == "PUT" else None,
                                     headers=headers or {}, method=method)
        with self.opener.open(req, timeout=left) as resp:
            return resp.read(4096).decode("utf-8", "replace").strip()


def lookup(missing: Dict[str, str], budget: float = BUDGET_S) -> Dict[str, Optional[str]]:
    """Ask IMDSv2 for this instance's type and region, spending at most `budget` seconds.

    Args:
        missing: receives ``instance_type`` / ``region`` reasons when they stay unknown.
        budget: total seconds for all requests together.

    Returns:
        ``{"instance_type": str | None, "region": str | None}``.
    """
    found = {"instance_type": None, "region": None}  # type: Dict[str, Optional[str]]
    endpoint = os.environ.get(ENDPOINT_ENV)
    if not endpoint:
        is_ec2, why = looks_like_ec2()
        if not is_ec2:
            missing["instance_type"] = missing["region"] = "not an EC2 instance (%s)" % why
            return found
        endpoint = DEFAULT_ENDPOINT
    client = _Client(endpoint, budget)
    try:
        token = client.request("/latest/api/token", "PUT",
                               {"X-aws-ec2-metadata-token-ttl-seconds": str(TOKEN_TTL_S)})
    except (OSError, ValueError, http.client.HTTPException) as exc:  # URLError is an OSError
        missing["instance_type"] = missing["region"] = _describe(exc, endpoint, budget)
        return found
    for key, path in (("instance_type", "/latest/meta-data/instance-type"),
                      ("region", "/latest/meta-data/placement/region")):
        try:
            value = client.request(path, headers={"X-aws-ec2-metadata-token": token})
        except (OSError, ValueError, http.client.HTTPException) as exc:
            missing[key] = _describe(exc, endpoint, budget)
            continue
        if value:
            found[key] = value
        else:
            missing[key] = "IMDS at %s returned an empty %s" % (endpoint, path)
    return found
