"""Which Neuron stack a host has (remote_agent/probe/stack.py), and the one-sentence refusals of issue 22."""
from __future__ import annotations

import pytest

from remote_agent.neuron_stack import classify, describe_stack, stack_problem
from remote_agent.probe.env import collect_env
from tests.agent.test_probe import make_venv


@pytest.mark.parametrize(("torch", "neuronx", "xla", "stack", "problem"), [
    ("2.14.0", "2.14.3.0.1234", None, "native", None),  # SDK 2.33's DLAMI
    ("2.13.0+cpu", "2.13.3.0.99", None, "native", None),
    ("2.13.0", "2.14.3.0.1", None, "native", "is built for torch 2.14 but this Python has torch 2.13.0"),
    ("2.9.0", "2.9.0.2.15.32035", "2.9.0", "xla", None),  # SDK 2.31's
    ("2.9.0", "2.9.0.2.15.32035", None, "xla", "needs torch-xla beside it"),
    ("2.9.0", None, "2.9.0", None, None),
])
def test_versions_make_a_stack(torch, neuronx, xla, stack, problem):
    got, why = classify(torch, neuronx, xla)
    assert got == stack
    assert (why is None) if problem is None else (problem in why)


def trn2_env(**changes):
    env = {"torch": "2.14.0", "torch_neuronx": "2.14.3.0.1", "torch_xla": None, "neuronx_cc": "2.22",
           "neuron_sdk": None, "instance_type": "trn2.48xlarge", "neuron_cores": 64, "neuron_venvs": [],
           "devices": [{"kind": "neuron", "cores": 4, "lnc": 2}] * 16}
    env.update(changes)
    return env


def test_the_refusals_are_one_sentence_each():
    assert stack_problem("", trn2_env()) is None
    assert stack_problem("native", trn2_env(instance_type="inf2.xlarge")).startswith(
        "--neuron-stack native needs Trn2 or Trn3 (TorchNeuron runs nowhere else), but this host is inf2.xlarge")
    assert stack_problem("xla", trn2_env()).startswith("--neuron-stack xla asked for, but this Python has the "
                                                        "native stack")
    none = stack_problem("", trn2_env(torch_neuronx=None))
    assert none.startswith("this Python has torch 2.14.0 and no torch-neuronx")
    assert "/opt/aws_neuronx_venv_torch_neuronx_2_14_0" in none


def test_the_newest_usable_venv_is_picked_and_the_others_named(tmp_path, monkeypatch):
    root = tmp_path / "opt"
    xla = make_venv(root, "aws_neuronx_venv_pytorch_2_9", {"torch-neuronx": "2.9.0.2.15", "torch-xla": "2.9.0",
                                                           "torch": "2.9.0"})
    native = make_venv(root, "aws_neuronx_venv_torch_neuronx_2_14_0", {"torch-neuronx": "2.14.3.0.1",
                                                                       "torch": "2.14.0"}, py="python3.12")
    monkeypatch.setenv("NEURONBENCH_NEURON_VENV_GLOB", f"{root}/aws_neuronx_venv_pytorch_* "
                                                       f"{root}/aws_neuronx_venv_torch_neuronx_*")
    env = collect_env(quick=True)
    assert [v["path"] for v in env["neuron_venvs"]] == [str(xla), str(native)]
    detail = env["neuron_stack_detail"]
    assert detail["venv"] == str(native) and detail["venv_stack"] == "native" and detail["other_venvs"] == [str(xla)]
    # On an Inf2, the XLA venv is the one to use.
    inf2 = describe_stack(dict(env, instance_type="inf2.xlarge"))
    assert inf2["venv"] == str(xla) and inf2["other_venvs"] == [str(native)]


def _pyenv_python(version: str) -> str | None:
    import glob
    import os
    import shutil
    import subprocess

    wanted = tuple(int(part) for part in version.split("."))
    candidates = [shutil.which(f"python{version}") or ""]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}*/bin/python{version}")))
    for path in candidates:
        if path and subprocess.run([path, "-c", f"import sys; assert sys.version_info[:2] == {wanted!r}"],
                                   capture_output=True, check=False).returncode == 0:
            return path
    return None


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_the_agent_probes_on_the_python_of_an_sdk_233_host(version, tmp_path, monkeypatch):
    """SDK 2.33's TorchNeuron wheels are for Python 3.12+: the agent itself must run there and find the venv."""
    import os

    from tests.agent.test_probe import probe_in_subprocess

    python = _pyenv_python(version)
    if python is None:
        pytest.skip(f"no Python {version} interpreter on this machine")
    root = tmp_path / "opt"
    native = make_venv(root, "aws_neuronx_venv_torch_neuronx_2_14_0", {"torch-neuronx": "2.14.3.0.1",
                                                                       "torch": "2.14.0"}, py=f"python{version}")
    monkeypatch.setenv("NEURONBENCH_NEURON_VENV_GLOB", f"{root}/aws_neuronx_venv_torch_neuronx_*")
    env = probe_in_subprocess(python, "-s", env=dict(os.environ))
    assert env["python"]["version"].startswith(version + ".")
    detail = env["neuron_stack_detail"]
    assert detail["venv"] == str(native) and detail["venv_stack"] == "native"
