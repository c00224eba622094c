"""Host profiles: validated, secret-free, saved in the config folder; `local` is always there."""
from __future__ import annotations

import json

import pytest

from app.core.errors import BadSpecError
from app.core.hosts import LOCAL, HostProfile, JumpHop, parse_jump_list
from app.services.hosts_store import HostsStore


def test_a_profile_shows_its_address_as_ssh_would():
    assert HostProfile("trn1", hostname="10.0.0.5", user="ubuntu").address == "ubuntu@10.0.0.5"
    assert HostProfile("g5", hostname="fe80::1", port=2222).address == "[fe80::1]:2222"
    assert LOCAL.address == "this computer"


@pytest.mark.parametrize("fields, sentence", [
    ({"name": "x"}, "host x: give --hostname (or --local for this computer)"),
    ({"name": "local", "hostname": "h"}, "'local' is the built-in name of this computer"),
    ({"name": "x", "hostname": "h", "port": 70000}, "port must be between 1 and 65535, not 70000"),
    ({"name": "my box", "hostname": "h"}, "must not contain spaces or control characters"),
    ({"name": "x", "hostname": "h\nb"}, "hostname must not contain control characters"),
    ({"name": "x", "local": True, "hostname": "h"}, "host x is --local (this computer, no SSH): drop --hostname"),
    ({"name": "x", "hostname": "h", "proxy_jump": "a@b@c"}, "proxy_jump: 'a@b@c' is not [user@]host[:port]"),
])
def test_bad_profiles_are_refused_with_the_field_to_fix(fields, sentence):
    with pytest.raises(BadSpecError) as info:
        HostProfile(**fields)
    assert sentence in str(info.value)


def test_proxy_jump_lists_parse_like_openssh():
    assert parse_jump_list("bastion,admin@10.0.0.1:2222") == [JumpHop("bastion"), JumpHop("10.0.0.1", "admin", 2222)]
    assert parse_jump_list("[fe80::1]:22") == [JumpHop("fe80::1")]
    assert parse_jump_list("none") == []


def test_the_store_keeps_profiles_and_never_loses_local(tmp_path):
    store = HostsStore(tmp_path)
    store.add(HostProfile("trn1", hostname="10.0.0.5", user="ubuntu", instance_type="trn1.2xlarge"))
    store.add(HostProfile("here", local=True, instance_type="trn1.32xlarge", region="us-west-2"))
    assert store.names() == ["local", "trn1", "here"]
    assert HostsStore(tmp_path).get("trn1").instance_type == "trn1.2xlarge"  # persisted
    with pytest.raises(BadSpecError, match="exists already"):
        store.add(HostProfile("trn1", hostname="other"))
    with pytest.raises(BadSpecError, match=r"built in .this computer. and cannot be removed"):
        store.remove("local")
    store.remove("trn1")
    with pytest.raises(BadSpecError, match=r"unknown host 'trn1': the hosts known are: local, here"):
        store.get("trn1")


def test_a_damaged_hosts_file_is_named(tmp_path):
    (tmp_path / "hosts.json").write_text("{not json")
    with pytest.raises(BadSpecError, match=r"hosts\.json is damaged"):
        HostsStore(tmp_path).list()


def test_hosts_cli_add_list_remove(run_cli):
    out = run_cli("hosts", "add", "trn1", "--hostname", "10.0.0.5", "--user", "ubuntu", "--port", "2222",
                  "--instance-type", "trn1.2xlarge", "--region", "us-east-1")
    assert out.code == 0, out.stderr
    out = run_cli("hosts", "add", "here", "--local", "--instance-type", "inf2.xlarge")
    assert out.code == 0, out.stderr
    listed = run_cli("hosts", "list", "--json").json()
    assert [h["name"] for h in listed] == ["local", "trn1", "here"]
    assert listed[1]["port"] == 2222 and listed[2]["local"] is True
    table = run_cli("hosts", "list").stdout
    assert "ubuntu@10.0.0.5:2222" in table and "trn1.2xlarge" in table
    out = run_cli("hosts", "remove", "local")
    assert out.code == 2 and "cannot be removed" in out.stderr
    assert run_cli("hosts", "remove", "trn1").code == 0
    assert [h["name"] for h in run_cli("hosts", "list", "--json").json()] == ["local", "here"]


def test_import_ssh_config_takes_aliases_and_skips_what_it_cannot_honour(run_cli, tmp_path):
    config = tmp_path / "ssh_config"
    config.write_text("""
Host trn1 trn1-alias
  HostName 10.0.0.5
  User ubuntu
  Port 2222
  IdentityFile ~/.ssh/trn.pem
  ProxyJump bastion
Host bastion
  HostName bastion.example.com
  User ec2-user
Host legacy
  ProxyCommand nc %h %p
Host *.internal
  User nobody
Host *
  ServerAliveInterval 10
""")
    out = run_cli("hosts", "import-ssh-config", "--config", str(config))
    assert out.code == 0, out.stderr
    assert "skipped legacy: it uses ProxyCommand" in out.stderr
    hosts = {h["name"]: h for h in json.loads(run_cli("hosts", "list", "--json").stdout)}
    assert set(hosts) == {"local", "bastion", "trn1", "trn1-alias"}
    assert hosts["trn1"]["hostname"] == "10.0.0.5" and hosts["trn1"]["port"] == 2222
    assert hosts["trn1"]["user"] == "ubuntu" and hosts["trn1"]["proxy_jump"] == "bastion"
    assert hosts["trn1"]["identity_file"].endswith("/.ssh/trn.pem")
    again = run_cli("hosts", "import-ssh-config", "--config", str(config))
    assert "skipped trn1: a host of that name exists already" in again.stderr


def test_profiles_hold_no_secret_fields():
    names = set(HostProfile.field_help())
    assert not names & {"password", "passphrase", "key", "secret", "token"}
