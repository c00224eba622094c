"""Slurm login-node hosts and their batch job: settings, what Slurm says, and the sbatch script (pure)."""
from __future__ import annotations

import json
import shlex
import subprocess

import pytest

from app.core.errors import BadSpecError
from app.core.hosts import HostProfile
from app.core.slurm import JobState, SlurmSettings, parse_scontrol_job, parse_squeue, refusal_sentence
from app.core.slurm_script import batch_script, sbatch_argv


def test_a_slurm_host_keeps_its_settings_through_the_hosts_file_and_old_files_still_load():
    profile = HostProfile(name="hpc", hostname="login.example",
                          slurm=SlurmSettings(partition="trn1", account="ml-team", time_minutes=30, exclusive=True))
    again = HostProfile.from_dict(json.loads(json.dumps(profile.to_dict())))
    assert again == profile and again.slurm.describe() == "partition trn1, account ml-team, 30 min, exclusive"
    old = {"name": "box", "local": False, "hostname": "b", "port": 22, "user": "", "identity_file": "",
           "proxy_jump": "", "python": "", "instance_type": "", "region": "", "ec2": None}
    assert HostProfile.from_dict(old).slurm is None
    assert "slurm" not in HostProfile.from_dict(old).to_dict()  # other hosts' entries stay as they were


@pytest.mark.parametrize("fields, words", [
    ({"partition": "a b"}, "--partition 'a b'"),
    ({"account": "x;rm"}, "--account 'x;rm'"),
    ({"time_minutes": -5}, "--time -5"),
])
def test_bad_slurm_settings_are_refused_naming_the_option(fields, words):
    with pytest.raises(BadSpecError, match=words.replace("(", r"\(")):
        SlurmSettings(**fields)


def test_a_slurm_host_is_an_ssh_login_node():
    with pytest.raises(BadSpecError, match="--hostname instead of --local"):
        HostProfile(name="hpc", local=True, slurm=SlurmSettings())


def test_squeue_and_scontrol_answers_become_states_with_their_reasons():
    pending = parse_squeue("42", "42|PENDING|Resources|\n")
    assert pending == JobState("42", "PENDING", "Resources", "") and pending.waiting
    assert pending.describe() == "queued (Resources)"
    running = parse_squeue("42", "42|RUNNING|None|n[1-2]")
    assert running.describe() == "running" and running.nodes == "n[1-2]" and not running.waiting
    assert parse_squeue("42", "") is None  # gone from the queue
    failed = parse_scontrol_job("42", "JobId=42 JobName=x\n   JobState=FAILED Reason=NonZeroExitCode Dependency=(null)"
                                      "\n   NodeList=n1")
    assert failed.ended and failed.state == "FAILED" and failed.describe() == "failed"


def test_slurms_refusal_is_one_sentence_in_its_own_words():
    stderr = ("sbatch: error: invalid partition specified: nosuch\n"
              "sbatch: error: Batch job submission failed: Invalid partition name specified\n")
    assert refusal_sentence(stderr, "nosuch") == (
        "Slurm refused the job on partition nosuch: invalid partition specified: nosuch; "
        "Batch job submission failed: Invalid partition name specified")


def test_the_sbatch_argv_asks_for_n_nodes_one_task_each_and_the_hosts_settings():
    argv = sbatch_argv("20260101-000000-abcdef", 4, "/home/u/.cache/neuronbench/runs/R",
                       SlurmSettings(partition="trn1", account="ml", time_minutes=90, exclusive=True))
    assert argv[:2] == ["sbatch", "--parsable"]
    assert {"--nodes=4", "--ntasks-per-node=1", "--job-name=neuronbench-20260101-000000-abcdef",
            "--output=/home/u/.cache/neuronbench/runs/R/slurm-%j.out", "--partition=trn1", "--account=ml",
            "--time=90", "--exclusive"} <= set(argv)
    assert not any(a.startswith(("--partition", "--account", "--time", "--exclusive"))
                   for a in sbatch_argv("r", 2, "/j", SlurmSettings()))


def test_the_batch_script_quotes_every_word_and_takes_the_master_from_the_first_nodes_address(tmp_path):
    hostile = ["/opt/py thon/bin/python3", "/home/u/agent dir; touch /tmp/pwned", "_slurm_node", "R"]
    script = batch_script("R", 2, hostile)
    srun_line = next(line for line in script.splitlines() if line.startswith("exec srun"))
    assert shlex.split(srun_line)[1:] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1",
                                          "--kill-on-bad-exit=1", *hostile]
    # Run the script's address lookup against a stand-in scontrol: the master is the NodeAddr, not the name.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text('#!/bin/sh\nif [ "$2" = hostnames ]; then printf "trn-a\\ntrn-b\\n"; '
                                      'else echo "NodeName=$3 Arch=x86_64 CoresPerSocket=1"; '
                                      'echo "   NodeAddr=10.0.3.7 NodeHostName=$3 Version=22.05"; fi\n')
    (bin_dir / "srun").write_text('#!/bin/sh\necho "MASTER=$NEURONBENCH_MASTER_ADDR"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True,
                         env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_NODELIST": "trn-[a-b]"})
    assert "MASTER=10.0.3.7" in out.stdout and "master trn-a at 10.0.3.7" in out.stdout


def test_hosts_add_slurm_saves_a_login_node_that_list_and_show_name_as_such(run_cli):
    out = run_cli("hosts", "add", "hpc", "--hostname", "login.example", "--slurm", "--partition", "trn1",
                  "--time", "30", "--exclusive")
    assert out.code == 0, out.stderr
    assert "the login node of a Slurm cluster (partition trn1, 30 min, exclusive)" in out.stderr
    assert "login.example (Slurm login node)" in run_cli("hosts", "list").stdout
    shown = run_cli("hosts", "show", "hpc", "--json").json()
    assert shown["slurm"] == {"partition": "trn1", "account": "", "time_minutes": 30, "exclusive": True}
    refused = run_cli("hosts", "add", "box", "--hostname", "b", "--partition", "trn1")
    assert refused.code == 2 and "--partition go with --slurm" in refused.stderr
    inference = run_cli("run", "--host", "hpc", "--workload", "infer")
    assert inference.code == 2 and "runs one training across --nnodes N nodes" in inference.stderr
    no_count = run_cli("run", "--host", "hpc", "--workload", "train")
    assert no_count.code == 2 and "--nnodes N" in no_count.stderr
