"""`neuronbench hosts add --ec2`, `run` on it, `ec2 list|cleanup` and `hosts import-ec2`, as a user types them.

Each command is a fresh process whose sockets are guarded to loopback like this
one's (guard/sitecustomize.py); boto3 in it reaches moto through AWS_ENDPOINT_URL.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from app.core.ec2_launch import TAG_OWNER, Ec2Launch
from app.paths import AppPaths
from app.services.ec2.aws import AwsClients
from app.services.ec2.holds import InstanceHolds
from app.services.ec2.instances import launch_instance, owner_tag
from app.services.run_control import cancel_run
from app.services.ssh_prompts import NoPrompts
from app.services.ssh_transport import SshTransport
from app.services.store import RunStore
from tests.conftest import REPO
from tests.e2e.conftest import remote_profile, remote_runs_dir
from tests.ec2.conftest import guarded_env, wait_until
from tests.helpers import paced_model_flags, tiny_model_flags

pytestmark = pytest.mark.slow

TRAIN = ["--workload", "train", *tiny_model_flags(), "--backend", "cpu", "--workers", "0", "--batch-size", "4",
         "--warmup", "1"]
# The paced model (tests/data/models/paced.py) for the run Ctrl-C leaves going until it is cancelled: no CPU burnt.
PACED = ["--workload", "train", *paced_model_flags(), "--backend", "cpu", "--workers", "0", "--batch-size", "4",
         "--warmup", "1"]


@pytest.fixture
def env(ssh_env, fake_aws):
    """The CLI's environment: isolated HOME (its ~/.ssh/config), moto's endpoint, and the network guard."""
    return guarded_env({**ssh_env, **{k: v for k, v in os.environ.items() if k.startswith("AWS_")}})


def add_ec2_host(run_cli, env, key, *extra: str) -> None:
    out = run_cli("hosts", "add", "trn", "--ec2", "--instance-type", "trn1.2xlarge", "--region", "us-east-1",
                  "--key-name", "bench-key", "--identity", str(key), "--python", sys.executable, *extra, env=env)
    assert out.code == 0, out.stderr


def test_hosts_add_ec2_checks_what_a_launch_needs(run_cli, env, fake_aws):
    out = run_cli("hosts", "add", "trn", "--ec2", "--instance-type", "trn1.2xlarge", env=env)
    assert out.code == 2
    assert "an --ec2 host needs --region, --key-name, --identity" in out.stderr
    out = run_cli("hosts", "add", "box", "--hostname", "10.0.0.5", "--spot", env=env)
    assert out.code == 2 and "--spot go with --ec2" in out.stderr


def test_run_on_an_ec2_host_asks_first_then_launches_runs_prices_and_terminates(
        run_cli, env, fake_aws, sshd, ssh_client, instance_ssh_config, host_key_console, data_dir):
    fake_aws.console = host_key_console
    add_ec2_host(run_cli, env, ssh_client.key, "--max-minutes", "30")
    listed = run_cli("hosts", "list", env=env)
    assert "EC2 trn1.2xlarge in us-east-1, launched per run" in listed.stdout

    refused = run_cli("run", "--host", "trn", *TRAIN, "--steps", "4", env=env)
    assert refused.code == 2
    assert "launching 1 instance, about $0.67 at most" in refused.stderr  # 30 min x $1.34375/h
    assert "pass --yes to launch without asking" in refused.stderr
    assert fake_aws.instances() == []

    out = run_cli("run", "--host", "trn", *TRAIN, "--steps", "4", "--yes", env=env)
    assert out.code == 0, out.stderr
    [instance] = fake_aws.instances()
    instance_id = instance["InstanceId"]
    assert instance["State"]["Name"] == "terminated"
    assert f"[trn] SSH to {instance_id} is up, host key SHA256:" in out.stderr and "matches its console" in out.stderr
    assert f"[trn] terminated {instance_id}" in out.stderr
    assert f"instance    {instance_id} (trn1.2xlarge on-demand in us-east-1" in out.stdout
    assert "benchmark   cost $" in out.stdout and "x $1.34/h, boot and compile included" in out.stdout

    with RunStore(AppPaths.resolve(data_dir).runs_db) as store:
        [run] = store.list_runs()
        bench = run.result["cost"]["benchmark"]
    assert run.result["ec2"]["instance_id"] == instance_id
    assert bench["usd_per_hour"] == 1.34375 and bench["seconds"] > 0
    assert bench["usd"] == pytest.approx(bench["seconds"] / 3600 * 1.34375)


def test_ctrl_c_during_a_run_terminates_the_instance(run_cli, env, fake_aws, sshd, ssh_client, instance_ssh_config,
                                                     host_key_console, data_dir):
    fake_aws.console = host_key_console
    add_ec2_host(run_cli, env, ssh_client.key)
    proc = subprocess.Popen([sys.executable, "-m", "app", "run", "--host", "trn", *PACED, "--steps", "3000",
                             "--yes"], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: fake_aws.instances(), 60, "the instance to be launched")
        runs = remote_runs_dir(sshd)

        def stepping() -> bool:
            logs = list(runs.glob("*/events.jsonl")) if runs.exists() else []
            return bool(logs) and '"type":"step"' in logs[0].read_text().replace(" ", "")

        wait_until(stepping, 120, "the run to take steps")
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, stderr
    [instance] = fake_aws.instances()
    assert instance["State"]["Name"] == "terminated", stderr
    run_id = next(runs.iterdir()).name  # the run goes on, detached, on our stand-in host: stop it
    cancel_run(SshTransport(remote_profile(sshd), AppPaths.resolve(data_dir), NoPrompts(True)), run_id)


def test_ec2_list_shows_owned_instances_and_cleanup_spares_those_a_live_run_holds(run_cli, env, fake_aws, data_dir):
    clients = AwsClients("us-east-1")
    launch = Ec2Launch("trn1.2xlarge", "us-east-1", "bench-key")
    left_behind = launch_instance(clients, launch, host="trn", run_id="20261122-050817-75f809", max_minutes=60)
    in_use = launch_instance(clients, Ec2Launch("inf2.xlarge", "us-east-1", "bench-key", spot=True), host="inf",
                             run_id="20261122-050818-000001", max_minutes=60)
    others = fake_aws.launch_foreign(tags={TAG_OWNER: "someone@else"})
    foreign = fake_aws.launch_foreign()
    holds = InstanceHolds(AppPaths.resolve(data_dir).data)
    holds.hold(in_use.instance_id)  # this test process plays the live run using it

    listed = run_cli("ec2", "list", "--region", "us-east-1", "--json", env=env)
    assert listed.code == 0, listed.stderr
    rows = {row["instance_id"]: row for row in listed.json()}
    assert set(rows) == {left_behind.instance_id, in_use.instance_id}  # not another owner's, not untagged ones
    assert rows[left_behind.instance_id]["owner"] == owner_tag() and rows[left_behind.instance_id]["host"] == "trn"
    assert rows[left_behind.instance_id]["usd_per_hour"] == 1.34375 and rows[in_use.instance_id]["market"] == "spot"
    assert rows[left_behind.instance_id]["usd_so_far"] is not None and rows[in_use.instance_id]["held"] is True
    text = run_cli("ec2", "list", "--region", "us-east-1", env=env)
    assert "in use by a run" in text.stdout and "COST SO FAR" in text.stdout

    asked = run_cli("ec2", "cleanup", "--region", "us-east-1", env=env)
    assert asked.code == 2 and "1 instance(s) would be terminated: pass --yes" in asked.stderr
    assert fake_aws.state(left_behind.instance_id) == "running"

    done = run_cli("ec2", "cleanup", "--region", "us-east-1", "--yes", env=env)
    assert done.code == 0, done.stderr
    assert f"terminated {left_behind.instance_id}" in done.stderr
    assert f"leaving {in_use.instance_id} (inf): a live run uses it" in done.stderr
    states = {i: fake_aws.state(i) for i in (left_behind.instance_id, in_use.instance_id, others, foreign)}
    assert states == {left_behind.instance_id: "terminated", in_use.instance_id: "running", others: "running",
                      foreign: "running"}
    holds.let_go(in_use.instance_id)


def test_import_ec2_adds_running_instances_as_priced_hosts(run_cli, env, fake_aws):
    tagged = fake_aws.launch_foreign(tags={"Name": "bench g5", "team": "ml"}, instance_type="g5.xlarge")
    fake_aws.launch_foreign(tags={"team": "web"}, instance_type="c7i.8xlarge")
    out = run_cli("hosts", "import-ec2", "--region", "us-east-1", "--tag", "team=ml", env=env)
    assert out.code == 0, out.stderr
    hosts = {p["name"]: p for p in run_cli("hosts", "list", "--json", env=env).json()}
    assert set(hosts) == {"local", "bench-g5"}
    [instance] = [i for i in fake_aws.instances() if i["InstanceId"] == tagged]
    assert hosts["bench-g5"]["instance_type"] == "g5.xlarge" and hosts["bench-g5"]["region"] == "us-east-1"
    assert hosts["bench-g5"]["hostname"] in (instance.get("PublicDnsName"), instance.get("PublicIpAddress"))
    again = run_cli("hosts", "import-ec2", "--region", "us-east-1", "--tag", "team=ml", env=env)
    assert "skipped bench-g5: a host of that name exists already" in again.stderr


def test_the_cli_subprocess_is_guarded_too(run_cli, env):
    """The guard the CLI processes run under refuses a connection that would leave this machine."""
    code = ("import socket; s = socket.socket()\n"
            "try:\n    s.connect(('54.1.2.3', 22))\nexcept Exception as e:\n    print(type(e).__name__)")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "SocketConnectBlockedError", proc.stderr
