"""The pure parts of launching on EC2: launch settings, images per family, boot script, console keys, cost."""
from __future__ import annotations

import pytest

from app.core.cost import apply_cost
from app.core.ec2_boot import console_fingerprints, key_family, scheduled_shutdown_minutes, user_data_script
from app.core.ec2_cost import LaunchPlan, confirmation_sentence, default_max_minutes, estimate_run_seconds, usd_so_far
from app.core.ec2_launch import AMI_PARAMETERS, Ec2Launch, ami_parameter, family_kind, quota_for
from app.core.errors import BadSpecError
from app.core.hosts import HostProfile
from app.core.pricebook import PriceBook, PriceEntry


@pytest.mark.parametrize("instance_type, kind, parameter", [
    ("trn1.2xlarge", "neuron", "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"),
    ("inf2.xlarge", "neuron", "/aws/service/neuron/dlami/multi-framework/ubuntu-24.04/latest/image_id"),
    ("g5.xlarge", "gpu",
     "/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.9-ubuntu-24.04/latest/ami-id"),
    ("p4d.24xlarge", "gpu",
     "/aws/service/deeplearning/ami/x86_64/oss-nvidia-driver-gpu-pytorch-2.9-ubuntu-24.04/latest/ami-id"),
    ("c7i.8xlarge", "cpu", "/aws/service/canonical/ubuntu/server/24.04/stable/current/amd64/hvm/ebs-gp3/ami-id"),
    ("c7g.large", "cpu", "/aws/service/canonical/ubuntu/server/24.04/stable/current/arm64/hvm/ebs-gp3/ami-id"),
])
def test_each_family_boots_the_image_aws_publishes_for_it(instance_type, kind, parameter):
    assert family_kind(instance_type) == kind and ami_parameter(instance_type) == parameter
    assert parameter in AMI_PARAMETERS.values()


def test_an_arm_gpu_type_asks_for_an_image():
    with pytest.raises(BadSpecError, match="give one with --ami"):
        Ec2Launch("g5g.xlarge", "us-east-1", "k")
    assert Ec2Launch("g5g.xlarge", "us-east-1", "k", ami="ami-0123456789abcdef0").ami


def test_quotas_are_named_per_family():
    assert quota_for("trn1.32xlarge", spot=False) == ("Running On-Demand Trn instances", "L-2C3B7624")
    assert quota_for("inf2.xlarge", spot=False) == ("Running On-Demand Inf instances", "L-1945791B")
    assert quota_for("g6e.xlarge", spot=True)[0] == "All G and VT Spot Instance Requests"
    assert quota_for("m7i.2xlarge", spot=False)[1] == "L-1216C47A"


@pytest.mark.parametrize("fields, sentence", [
    ({"instance_type": "trn1"}, "--instance-type 'trn1' is not an EC2 instance type"),
    ({"region": "virginia"}, "--region 'virginia' is not an AWS region code"),
    ({"key_name": ""}, "--key-name must name the EC2 key pair"),
    ({"ami": "ubuntu"}, "--ami 'ubuntu' is not an AMI id"),
    ({"subnet": "10.0.0.0/24"}, "--subnet '10.0.0.0/24' is not a subnet id"),
    ({"security_group": "default"}, "--security-group 'default' is not a security group id"),
    ({"max_minutes": -5}, "--max-minutes must be between 1 and 10080"),
])
def test_bad_launch_settings_name_the_flag(fields, sentence):
    settings = {"instance_type": "trn1.2xlarge", "region": "us-east-1", "key_name": "k", **fields}
    with pytest.raises(BadSpecError) as info:
        Ec2Launch(**settings)
    assert sentence in str(info.value)


def test_an_ec2_profile_has_no_address_until_launched_and_survives_json():
    profile = HostProfile("trn", identity_file="~/.ssh/k.pem",
                          ec2=Ec2Launch("trn1.2xlarge", "us-east-1", "k", spot=True, max_minutes=90))
    assert profile.address == "EC2 trn1.2xlarge in us-east-1, spot, launched per run"
    assert HostProfile.from_dict(profile.to_dict()) == profile
    with pytest.raises(BadSpecError, match="launched on EC2 for each run: drop --hostname"):
        HostProfile("trn", hostname="10.0.0.5", ec2=Ec2Launch("trn1.2xlarge", "us-east-1", "k"))
    with pytest.raises(BadSpecError, match="--local and --ec2 exclude each other"):
        HostProfile("trn", local=True, ec2=Ec2Launch("trn1.2xlarge", "us-east-1", "k"))


def test_the_boot_script_arms_a_shutdown_after_max_minutes():
    script = user_data_script(95, "20261122-050817-75f809")
    assert script.startswith("#!/bin/sh\n") and "run 20261122-050817-75f809" in script
    assert scheduled_shutdown_minutes(script) == 95
    assert "(sleep 5700 && poweroff)" in script
    with pytest.raises(ValueError):
        user_data_script(0)


# An Ubuntu instance's console as cloud-init prints it (lines behind the "ec2: " prefix), after a reboot.
CONSOLE = """\
[    5.101] cloud-init[612]: Generating public/private ed25519 key pair.
ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----
ec2: 256 SHA256:OLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDOLDO root@ip-172-31-2-9 (ED25519)
ec2: -----END SSH HOST KEY FINGERPRINTS-----
[   50.2] reboot: Restarting system
ec2: #############################################################
ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----
ec2: 256 SHA256:kNFl8oLP5m1zYqNeHvLJZL7gqfDnQ+aN0ZXM2Wj0fE8 root@ip-172-31-2-9 (ECDSA)
ec2: 256 SHA256:u4WU3Vgb0R3cQf6hbJQ+JgW2WCPcvHrLPnXbE3dl1lo root@ip-172-31-2-9 (ED25519)
ec2: 3072 SHA256:PZ1yqzVv2uYcW8I3hA1OqY2nV7Ew0TqzO0yZr3W8G1k root@ip-172-31-2-9 (RSA)
ec2: -----END SSH HOST KEY FINGERPRINTS-----
ec2: #############################################################
-----BEGIN SSH HOST KEY KEYS-----
ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK root@ip-172-31-2-9
-----END SSH HOST KEY KEYS-----
"""


def test_the_console_fingerprints_are_read_from_the_last_block():
    prints = console_fingerprints(CONSOLE)
    assert prints == {"ECDSA": {"SHA256:kNFl8oLP5m1zYqNeHvLJZL7gqfDnQ+aN0ZXM2Wj0fE8"},
                      "ED25519": {"SHA256:u4WU3Vgb0R3cQf6hbJQ+JgW2WCPcvHrLPnXbE3dl1lo"},
                      "RSA": {"SHA256:PZ1yqzVv2uYcW8I3hA1OqY2nV7Ew0TqzO0yZr3W8G1k"}}
    assert console_fingerprints("Linux version 6.8.0\nno keys yet\n") == {}
    assert [key_family(t) for t in ("ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512", "ssh-rsa")] == \
        ["ED25519", "ECDSA", "RSA", "RSA"]


def test_the_dead_man_switch_defaults_to_twice_the_estimate_plus_15_minutes():
    train = {"workload": "train", "steps": 500, "batch_sizes": [16]}
    estimate = estimate_run_seconds(train, "trn1.2xlarge")
    assert estimate == 6 * 60 + 10 * 60 + 500  # boot and deploy, one compile, 500 steps at 1 s
    assert default_max_minutes(estimate) == 64  # 24.3 min x 2 + 15, rounded up
    infer = {"workload": "infer", "batch_sizes": [1, 4, 16], "duration": 10, "min_iters": 100}
    assert estimate_run_seconds(infer, "g5.xlarge") == 360 + 3 * (120 + 30 + 10)
    assert estimate_run_seconds(train, "trn1.2xlarge", repeats=3) == 360 + 3 * (600 + 500)


def test_the_confirmation_bounds_the_bill_by_the_dead_man_switch():
    plans = [LaunchPlan("trn", "trn1.2xlarge", "us-east-1", "on_demand", 1.34375, 1476, 60),
             LaunchPlan("g5", "g5.xlarge", "us-east-1", "spot", 0.4, 840, 45),
             LaunchPlan("cpu", "c7i.8xlarge", "us-east-1", "on_demand", 1.428, 600, 60)]
    sentence = confirmation_sentence(plans)
    # 1.34375 + 0.4 x 0.75 + 1.428 = 3.07175 at most
    assert sentence.startswith("3 instances, about $3.07 at most (expected about $")
    assert "g5: g5.xlarge spot in us-east-1, $0.40/h, terminated after the run or at the latest 45 min" in sentence
    unpriced = confirmation_sentence([LaunchPlan("x", "zz9.large", "us-east-1", "on_demand", None, 600, 30)])
    assert unpriced.startswith("1 instance, price unknown for zz9.large (x)")


def test_what_the_benchmark_cost_is_launch_to_terminate_times_the_price_of_its_market():
    book = PriceBook(snapshot=[PriceEntry("trn1.2xlarge", "us-east-1", "on_demand", 1.34375, "catalog", None,
                                          "snapshot"),
                               PriceEntry("trn1.2xlarge", "us-east-1", "spot", 0.2198, "catalog", None,
                                          "snapshot")])
    result = {"workload": "train", "env": {}, "train": {"throughput_samples_per_s": 100.0,
                                                        "compile": {"seconds": 60.0}},
              "ec2": {"instance_id": "i-0123456789abcdef0", "market": "spot", "launched_at": 1000.0,
                      "terminated_at": 1000.0 + 1800}}
    apply_cost(result, book, "trn1.2xlarge", "us-east-1")
    bench = result["cost"]["benchmark"]
    assert bench["seconds"] == 1800 and bench["market"] == "spot"
    assert bench["usd"] == pytest.approx(0.2198 / 2)
    assert result["cost"]["usd_per_hour"] == 1.34375  # the per-1M comparison stays on-demand
    assert usd_so_far(1000.0, 1000.0 + 3600, 1.34375) == pytest.approx(1.34375)
