"""A run on an --ec2 host: launched with its guards, reached through ~/.ssh/config, terminated however it ends.

boto3 talks HTTP to moto on 127.0.0.1; the "instance" is a real sshd on 127.0.0.1
that ~/.ssh/config maps every instance id to; the agent and the training are real.
"""
from __future__ import annotations

import base64
import sys

import pytest

from app.core.ec2_launch import AMI_PARAMETERS, TAG_HOST, TAG_OWNER, TAG_RUN_ID, Ec2Launch
from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services.ec2.lease import Ec2RunOptions, Ec2Timings, Ec2Transport
from app.services.multi_run import RunListener, run_on_hosts
from app.services.recorder import RunRecorder
from app.services.run_control import cancel_run
from app.services.ssh_prompts import NoPrompts
from app.services.ssh_transport import SshTransport
from app.services.store import RunStore
from tests.e2e.conftest import remote_profile
from tests.ec2.conftest import cloud_init_console, wait_until
from tests.helpers import TINY_ARGS, TINY_MODEL, paced_spec_fields

pytestmark = pytest.mark.slow

FAST = Ec2Timings(running_timeout_s=30, ssh_timeout_s=3, poll_s=0.1, watch_s=0.2, console_wait_s=1,
                  console_poll_s=0.1, connect_timeout_s=5)


def tiny_spec(**fields):
    from remote_agent.protocol import RunSpec

    model_args = {k: int(v) for k, v in (a.split("=") for a in TINY_ARGS)}
    base = dict(workload="train", model=TINY_MODEL, model_args=model_args, backend="cpu", batch_sizes=(4,),
                workers=0, warmup=1, steps=5)
    base.update(fields)
    return RunSpec(**base)


def paced_spec(**fields):
    """tiny_spec with the paced model (tests/data/models/paced.py): the runs here are about the instance, and a
    run the test interrupts goes on until it is cancelled, at almost no CPU meanwhile."""
    return tiny_spec(**{**paced_spec_fields(), **fields})


def ec2_profile(sshd=None, name: str = "trn", **launch) -> HostProfile:
    settings = {"instance_type": "trn1.2xlarge", "region": "us-east-1", "key_name": "bench-key", **launch}
    return HostProfile(name, ec2=Ec2Launch(**settings), python=sys.executable,
                       identity_file=str(sshd.client_key) if sshd else "")


def lease(profile, data_dir, max_minutes=42, keep=False, stages=None, prompts=None) -> Ec2Transport:
    options = Ec2RunOptions(max_minutes=max_minutes, keep=keep, timings=FAST,
                            on_stage=(lambda stage, sentence: stages.append((stage, sentence))) if stages is not None
                            else None)
    return Ec2Transport(profile, AppPaths.resolve(data_dir), options, prompts or NoPrompts())


def tag(instance: dict, key: str) -> str | None:
    return next((t["Value"] for t in instance.get("Tags", []) if t["Key"] == key), None)


@pytest.fixture
def reachable(fake_aws, instance_ssh_config, host_key_console):
    """Launched instances answer on the test sshd, and their console shows its host key."""
    fake_aws.console = host_key_console
    return fake_aws


def test_a_run_launches_a_guarded_tagged_instance_trusts_its_console_key_and_terminates_it(reachable, sshd,
                                                                                           data_dir):
    stages: list[tuple[str, str]] = []
    transport = lease(ec2_profile(sshd), data_dir, max_minutes=42, stages=stages)
    [result] = run_on_hosts([transport], paced_spec())

    assert result["status"] == "ok", result.get("error")
    [instance] = reachable.instances()
    block = result["ec2"]
    assert block["instance_id"] == instance["InstanceId"] and instance["InstanceType"] == "trn1.2xlarge"
    assert instance["State"]["Name"] == "terminated" and block["terminated_at"] >= block["launched_at"]
    # the image: the Neuron DLAMI named by AWS's public parameter, resolved at launch and recorded
    assert block["ami_parameter"] == AMI_PARAMETERS["neuron"] and block["ami"] == reachable.ssm_public[
        AMI_PARAMETERS["neuron"]] == instance["ImageId"]
    # tagged, and the dead-man switch armed in the launch request itself
    assert tag(instance, TAG_RUN_ID) == result["run_id"] and tag(instance, TAG_HOST) == "trn"
    assert "@" in tag(instance, TAG_OWNER)
    assert reachable.attribute(block["instance_id"], "instanceInitiatedShutdownBehavior") == "terminate"
    user_data = base64.b64decode(reachable.attribute(block["instance_id"], "userData")).decode()
    assert user_data.startswith("#!/bin/sh\n") and "\nshutdown -h +42 " in user_data
    # a new instance trusted from its console, with no question asked (NoPrompts refuses unknown keys)
    assert [s for s, _ in stages][:5] == ["launching", "pending", "running", "ssh up", "deployed"]
    assert "matches its console" in dict(stages)["ssh up"] and stages[-1][0] == "terminated"
    app_known = (AppPaths.resolve(data_dir).config / "known_hosts").read_text()
    assert app_known.startswith(f"{block['instance_id']} ssh-ed25519 ")


def test_a_host_key_that_is_not_on_the_console_is_refused_and_the_instance_terminated(fake_aws, instance_ssh_config,
                                                                                     sshd, data_dir):
    fake_aws.console = cloud_init_console({"ED25519": "SHA256:" + "A" * 43})
    [result] = run_on_hosts([lease(ec2_profile(sshd), data_dir)], tiny_spec())
    assert result["status"] == "failed" and result["error"]["kind"] == "HostKeyError"
    assert "is not one that instance i-" in result["error"]["message"]
    assert "printed on its console" in result["error"]["message"]
    assert [i["State"]["Name"] for i in fake_aws.instances()] == ["terminated"]
    assert not (AppPaths.resolve(data_dir).config / "known_hosts").exists()


def test_a_failed_run_terminates_its_instance(reachable, sshd, data_dir):
    [result] = run_on_hosts([lease(ec2_profile(sshd), data_dir)], tiny_spec(model="vit_tinny_patch16_224"))
    assert result["status"] == "failed" and "unknown model" in result["error"]["message"]
    assert [i["State"]["Name"] for i in reachable.instances()] == ["terminated"]
    assert result["ec2"]["terminated_at"] is not None


def test_ctrl_c_mid_run_terminates_the_instance(reachable, sshd, data_dir):
    transport = lease(ec2_profile(sshd), data_dir)

    def interrupt_at_first_step(event):
        if event["type"] == "step":
            raise KeyboardInterrupt  # what Ctrl-C raises in the thread that follows the run

    with pytest.raises(KeyboardInterrupt):
        run_on_hosts([transport], paced_spec(steps=400), listener_for=lambda ticket: RunListener(
            on_event=interrupt_at_first_step))
    [instance] = reachable.instances()
    assert instance["State"]["Name"] == "terminated"
    # the run itself goes on detached on the host (a real instance would be gone): stop it
    cancel_run(SshTransport(remote_profile(sshd), AppPaths.resolve(data_dir), NoPrompts(True)), tag(instance,
                                                                                                 TAG_RUN_ID))


def test_a_spot_interruption_mid_run_ends_it_interrupted_with_its_events_kept(reachable, sshd, data_dir):
    paths = AppPaths.resolve(data_dir)
    store = RunStore(paths.runs_db)
    transport = lease(ec2_profile(sshd, spot=True), data_dir)
    seen = []

    def listener_for(ticket):
        recorder = RunRecorder.start(store, None, ticket.host, paced_spec().to_dict(), ticket.run_id)

        def on_event(event):
            recorder(event)
            seen.append(event["type"])
            if event["type"] == "step" and seen.count("step") == 3:
                # AWS takes the spot instance back (a 2-minute notice, then terminate): from outside the run
                instance_id = transport.instance.instance_id
                reachable.client().terminate_instances(InstanceIds=[instance_id])

        return RunListener(on_event=on_event, on_result=recorder.finish)

    [result] = run_on_hosts([transport], paced_spec(steps=3000), listener_for=listener_for)
    try:
        assert result["status"] == "interrupted"
        assert result["error"]["kind"] == "InstanceGoneError"
        assert "went away mid-run" in result["error"]["message"] and "terminated" in result["error"]["message"]
        assert result["ec2"]["market"] == "spot"
        stored = store.load(result["run_id"])
        assert stored.status == "interrupted"
        assert store.event_count(result["run_id"]) >= seen.index("step") + 3  # hello, probe, ... the steps
        assert [e["type"] for e in store.events(result["run_id"], types=("step",))][:3] == ["step"] * 3
    finally:
        cancel_run(SshTransport(remote_profile(sshd), paths, NoPrompts(True)), result["run_id"])
        store.close()


def test_keep_leaves_the_instance_for_the_next_run_which_terminates_it(reachable, sshd, data_dir):
    first = run_on_hosts([lease(ec2_profile(sshd), data_dir, keep=True)], paced_spec())[0]
    assert first["status"] == "ok" and first["ec2"]["kept"] is True
    [instance] = reachable.instances()
    assert instance["State"]["Name"] == "running"

    second = run_on_hosts([lease(ec2_profile(sshd), data_dir)], paced_spec())[0]
    assert second["status"] == "ok" and second["ec2"]["reused"] is True
    assert second["ec2"]["instance_id"] == instance["InstanceId"]
    assert [i["State"]["Name"] for i in reachable.instances()] == ["terminated"]  # no second instance


@pytest.mark.parametrize("code, message, expected", [
    ("VcpuLimitExceeded", "You have requested more vCPU capacity than your current vCPU limit of 0 allows for the "
     "instance bucket that the specified instance type belongs to. Please visit http://aws.amazon.com/contact-us/"
     "ec2-request to request an adjustment to this limit.",
     ['Service Quotas quota "Running On-Demand Trn instances" (L-2C3B7624) is 0 vCPUs', "ask for more vCPUs"]),
    ("InsufficientInstanceCapacity", "We currently do not have sufficient trn1.2xlarge capacity in the Availability "
     "Zone you requested (us-east-1a). Our system will be working on provisioning additional capacity.",
     ["no trn1.2xlarge capacity", "these zones offer trn1.2xlarge: us-east-1c, us-east-1f"]),
    ("InvalidKeyPair.NotFound", "The key pair 'bench-key' does not exist",
     ["no EC2 key pair named 'bench-key' in us-east-1", "aws ec2 import-key-pair --region us-east-1"]),
])
def test_aws_refusals_are_one_sentence_saying_what_to_do(fake_aws, data_dir, code, message, expected):
    fake_aws.launch_error = (code, message)
    [result] = run_on_hosts([lease(ec2_profile(), data_dir)], tiny_spec())
    assert result["status"] == "failed" and result["error"]["kind"] == "CloudError"
    for part in expected:
        assert part in result["error"]["message"]
    assert fake_aws.instances() == []  # nothing was launched, nothing is billing


def test_spot_capacity_gone_says_to_run_on_demand(fake_aws, data_dir):
    fake_aws.launch_error = ("InsufficientInstanceCapacity", "There is no Spot capacity available that matches "
                             "your request.")
    [result] = run_on_hosts([lease(ec2_profile(spot=True), data_dir)], tiny_spec())
    assert "no spot capacity for trn1.2xlarge in us-east-1" in result["error"]["message"]
    assert "without --spot" in result["error"]["message"]


def test_no_credentials_is_one_sentence(fake_aws, data_dir, monkeypatch):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name)
    [result] = run_on_hosts([lease(ec2_profile(), data_dir)], tiny_spec())
    assert result["error"]["message"].startswith("no AWS credentials found while")
    assert "aws configure" in result["error"]["message"]


def test_an_instance_whose_ssh_never_answers_points_at_the_security_group(fake_aws, ssh_client, data_dir):
    from tests.e2e.sshd import free_port

    (ssh_client.home / ".ssh" / "config").write_text(f"Host i-*\n  HostName 127.0.0.1\n  Port {free_port()}\n")
    group = fake_aws.client().create_security_group(GroupName="bench", Description="no SSH in")["GroupId"]
    [result] = run_on_hosts([lease(ec2_profile(security_group=group), data_dir)], tiny_spec())
    assert result["error"]["kind"] == "ConnectError", result["error"]
    assert "is running but SSH did not answer" in result["error"]["message"]
    assert f"{group} must let TCP port 22 in" in result["error"]["message"]
    assert [i["State"]["Name"] for i in fake_aws.instances()] == ["terminated"]


@pytest.mark.filterwarnings("ignore:A test tried to use socket.socket.connect")
def test_without_an_ssh_config_block_the_public_address_is_tried_and_the_guard_blocks_it(fake_aws, ssh_client,
                                                                                         data_dir):
    """No `Host i-*` block: the product falls back to the instance's public address, which here is made up
    by moto -- the network guard must block that connection rather than let it leave this machine."""
    assert not (ssh_client.home / ".ssh" / "config").exists()
    transport = lease(ec2_profile(), data_dir)
    [result] = run_on_hosts([transport], tiny_spec())
    [instance] = fake_aws.instances()
    public_ip = transport.instance.public_ip
    assert public_ip and not public_ip.startswith("127.")
    assert result["status"] == "failed"
    assert "SocketConnectBlockedError" in result["error"]["message"] and public_ip in result["error"]["message"]
    assert instance["State"]["Name"] == "terminated"


def test_the_app_says_what_to_install_when_boto3_is_missing(fake_aws, data_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "boto3", None)  # import boto3 now raises ImportError
    [result] = run_on_hosts([lease(ec2_profile(), data_dir)], tiny_spec())
    assert "needs boto3: pip install 'neuronbench[aws]'" in result["error"]["message"]


def test_the_interrupted_run_is_waited_for_by_no_reconnect_loop(reachable, sshd, data_dir):
    """The watcher notices the instance is gone: the run ends in seconds, not after 15 min of reconnecting."""
    transport = lease(ec2_profile(sshd), data_dir)
    transport.start(["probe", "--quick"]).wait(30)
    reachable.client().terminate_instances(InstanceIds=[transport.instance.instance_id])
    wait_until(lambda: transport.gone is not None, 10, "the watcher to notice the instance is gone")
    with pytest.raises(Exception, match="went away mid-run"):
        transport.start(["probe", "--quick"])
    transport.release()


def test_an_instance_reached_through_a_proxycommand_as_with_session_manager(fake_aws, ssh_client, sshd,
                                                                             host_key_console, data_dir):
    """`Host i-*` with a ProxyCommand (how Session Manager users reach instances): the command carries SSH."""
    from pathlib import Path

    relay = Path(__file__).resolve().parent / "tcp_relay.py"
    (ssh_client.home / ".ssh" / "config").write_text(
        f"Host i-*\n    ProxyCommand {sys.executable} {relay} 127.0.0.1 {sshd.port}\n    User {sshd.user}\n")
    fake_aws.console = host_key_console
    [result] = run_on_hosts([lease(ec2_profile(sshd), data_dir)], paced_spec())
    assert result["status"] == "ok", result.get("error")
    assert [i["State"]["Name"] for i in fake_aws.instances()] == ["terminated"]
