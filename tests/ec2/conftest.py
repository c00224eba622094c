"""EC2 tests: boto3 against moto in server mode on 127.0.0.1, and a real sshd standing in for the instances.

Network guard (mandatory): moto hands out random public and private addresses,
and no test may ever connect to one.  Every test here runs under pytest-socket
with only 127.0.0.0/8 (and Unix sockets) allowed: any connect() elsewhere raises
instead of leaving this machine.  CLI subprocesses get the same guard through
``guard/sitecustomize.py`` (see ``guarded_env``).  The moto server binds 127.0.0.1.

What moto cannot play (a console that prints host keys, AWS's refusals for
quotas, capacity and unknown key pairs) is served by moto's own HTTP handlers,
patched here to answer in AWS's documented formats: the product sees real
HTTP responses parsed by botocore.
"""
from __future__ import annotations

import os
import sys
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytest_socket = pytest.importorskip("pytest_socket", reason="pytest-socket is needed for the EC2 network guard")
moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'moto[server]')")

sys.path.insert(0, str(Path(__file__).resolve().parent / "guard"))
import netguard  # noqa: E402  (the same guard as the CLI subprocesses', from guard/)

MOTO_ACCOUNT = "123456789012"
ALLOWED = ["127.0.0.0/8"]
GUARD_DIR = Path(__file__).resolve().parent / "guard"
REGIONS = ("us-east-1", "us-west-2")


@pytest.fixture(autouse=True)
def network_guard():
    """Only loopback: a connect() to a moto-issued address raises SocketConnectBlockedError, a lookup of a
    made-up name raises LookupBlockedError (tests/ec2/guard/netguard.py)."""
    netguard.install(ALLOWED)
    yield
    netguard.remove()


@pytest.fixture(scope="session", autouse=True)
def moto_url():
    """Started before any test's fixtures (the GUI tests' leak check sees its threads as already there)."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    assert host == "127.0.0.1"
    yield f"http://127.0.0.1:{port}"
    server.stop()


def cloud_init_console(fingerprints: dict[str, str], prefix: str = "ec2: ") -> str:
    """A console output as cloud-init writes it on Ubuntu: boot noise, then the host key fingerprint block."""
    lines = ["[    0.000000] Linux version 6.8.0-1015-aws (buildd@lcy02-amd64-051)",
             "[   12.145012] cloud-init[1023]: Cloud-init v. 24.1.3 running 'modules:final'",
             f"{prefix}#############################################################",
             f"{prefix}-----BEGIN SSH HOST KEY FINGERPRINTS-----"]
    lines += [f"{prefix}256 {fp} root@ip-172-31-20-7 ({family})" for family, fp in fingerprints.items()]
    lines += [f"{prefix}-----END SSH HOST KEY FINGERPRINTS-----",
              f"{prefix}#############################################################",
              "-----BEGIN SSH HOST KEY KEYS-----", "-----END SSH HOST KEY KEYS-----"]
    return "\n".join(lines) + "\n"


@dataclass
class FakeAws:
    """The moto server, reset for one test, with AWS's public parameters and the instance console set up."""

    url: str
    console: str = ""
    launch_error: tuple[str, str] | None = None
    ssm_public: dict[str, str] = field(default_factory=dict)

    def client(self, service: str = "ec2", region: str = "us-east-1"):
        import boto3

        return boto3.client(service, region_name=region, endpoint_url=self.url)

    def instances(self, region: str = "us-east-1", states: tuple[str, ...] = ()) -> list[dict]:
        filters = [{"Name": "instance-state-name", "Values": list(states)}] if states else []
        pages = self.client(region=region).describe_instances(Filters=filters)["Reservations"]
        return [i for r in pages for i in r["Instances"]]

    def state(self, instance_id: str, region: str = "us-east-1") -> str:
        found = self.client(region=region).describe_instances(InstanceIds=[instance_id])
        return found["Reservations"][0]["Instances"][0]["State"]["Name"]

    def attribute(self, instance_id: str, name: str, region: str = "us-east-1"):
        answer = self.client(region=region).describe_instance_attribute(InstanceId=instance_id, Attribute=name)
        key = name[0].upper() + name[1:]
        return answer[key]["Value"]

    def launch_foreign(self, region: str = "us-east-1", tags: dict[str, str] | None = None,
                       instance_type: str = "g5.xlarge") -> str:
        """An instance launched by someone else (the console, another tool)."""
        ec2 = self.client(region=region)
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        spec = [{"ResourceType": "instance", "Tags": [{"Key": k, "Value": v} for k, v in (tags or {}).items()]}]
        answer = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType=instance_type,
                                   **({"TagSpecifications": spec} if tags else {}))
        return answer["Instances"][0]["InstanceId"]


def _publish_public_parameters(values: dict[str, str]) -> None:
    """AWS's public SSM parameters (AMI ids), added the way moto loads its own /aws/service tree."""
    import datetime

    from moto.ssm.models import Parameter, ssm_backends

    for region in REGIONS:
        backend = ssm_backends[MOTO_ACCOUNT][region]
        for name, value in values.items():
            backend._parameters[name].append(Parameter(
                account_id=MOTO_ACCOUNT, name=name, value=value, parameter_type="String", description=None,
                allowed_pattern=None, keyid=None, last_modified_date=datetime.datetime.now(datetime.timezone.utc),
                version=1, data_type="aws:ec2:image"))


@pytest.fixture
def fake_aws(moto_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> FakeAws:
    urllib.request.urlopen(urllib.request.Request(f"{moto_url}/moto-api/reset", method="POST"), timeout=10).read()
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    aws = FakeAws(moto_url)
    image = aws.client().describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    from app.core.ec2_launch import AMI_PARAMETERS

    aws.ssm_public = {name: image for name in AMI_PARAMETERS.values()}
    _publish_public_parameters(aws.ssm_public)

    from moto.ec2.exceptions import EC2ClientError
    from moto.ec2.responses.general import General
    from moto.ec2.responses.instances import InstanceResponse
    from moto.ec2.utils import Base64EncodedString

    real_console = General.get_console_output
    real_run = InstanceResponse.run_instances

    def console(self):
        result = real_console(self)
        if aws.console:
            result.result["Output"] = Base64EncodedString.from_raw_string(aws.console)
        return result

    def run_instances(self):
        if aws.launch_error is not None:
            raise EC2ClientError(*aws.launch_error)
        return real_run(self)

    monkeypatch.setattr(General, "get_console_output", console)
    monkeypatch.setattr(InstanceResponse, "run_instances", run_instances)
    return aws


@pytest.fixture
def instance_ssh_config(ssh_client, sshd) -> Path:
    """~/.ssh/config mapping every instance id to the test sshd: how the launched 'instances' are reached."""
    config = ssh_client.home / ".ssh" / "config"
    config.write_text(f"Host i-*\n    HostName 127.0.0.1\n    Port {sshd.port}\n    User {sshd.user}\n"
                      f"    IdentityFile {ssh_client.key}\n")
    return config


@pytest.fixture
def host_key_console(sshd) -> str:
    """The console output of an instance whose sshd is the test's: its real host key fingerprint."""
    import paramiko

    key = paramiko.PKey.from_path(str(sshd.host_key))
    return cloud_init_console({"ED25519": key.fingerprint})


def guarded_env(env: dict[str, str]) -> dict[str, str]:
    """A CLI subprocess's environment with the same loopback-only guard (guard/sitecustomize.py)."""
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(GUARD_DIR), env.get("PYTHONPATH", "")) if p)
    env["NEURONBENCH_TEST_ALLOW_HOSTS"] = ",".join(ALLOWED)
    return env


def wait_until(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


PYTHON = sys.executable
