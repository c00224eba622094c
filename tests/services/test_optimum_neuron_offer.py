"""Which runs need optimum-neuron, and the sentences of its offer (no host: the install is tests/e2e's).

optimum-neuron is the neuron backend's generation path on the XLA-era Neuron SDK (torch-neuronx 2.9, SDK <= 2.31);
TorchNeuron (2.10+, SDK 2.33) generates without it, and so does every other backend.
"""
from __future__ import annotations

import json
from pathlib import Path

from app.services.deploy import OPTIMUM_NEURON, RemoteSetup, needs_optimum_neuron
from app.services.host_libraries import install_offer, libraries_for_command, missing_sentence
from app.services.ssh_prompts import FROM_PYPI
from remote_agent.protocol import RunSpec

XLA_NEURONX = "2.9.0.2.11.0"  # SDK 2.31's
NATIVE_NEURONX = "2.14.3.0.0"  # SDK 2.33's TorchNeuron
VENV_PYTHON = "/opt/aws_neuronx_venv_pytorch_2_9/bin/python"
RUN = ["run", "--run-id", "20260101-000000-abcdef"]


def request(**fields) -> bytes:
    spec = RunSpec(**{"workload": "generate", "model": "hf:tiny-llama", "batch_sizes": (1,), **fields})
    return json.dumps(spec.to_dict()).encode()


def setup(pip: str = "25.1") -> RemoteSetup:
    return RemoteSetup(python=VENV_PYTHON, python_version="3.10.12", cache_dir="/home/ubuntu/.cache/neuronbench",
                       agent_path="/home/ubuntu/.cache/neuronbench/agent/a", uploaded=False,
                       missing=(OPTIMUM_NEURON,), torch="2.9.0", pip=pip, torch_neuronx=XLA_NEURONX, neuron_devices=1)


def test_a_generate_run_on_backend_neuron_or_auto_asks_for_it_and_no_other_run_does():
    assert OPTIMUM_NEURON in libraries_for_command(RUN, request(backend="neuron"))
    assert OPTIMUM_NEURON in libraries_for_command(RUN, request(backend="auto"))
    assert OPTIMUM_NEURON not in libraries_for_command(RUN, request(backend="cpu"))
    assert OPTIMUM_NEURON not in libraries_for_command(RUN, request(backend="neuron", neuron_stack="native"))
    assert OPTIMUM_NEURON not in libraries_for_command(RUN, request(workload="infer", backend="neuron"))
    assert libraries_for_command(RUN, request(backend="neuron")) == ("transformers", OPTIMUM_NEURON)


def test_only_the_xla_stack_with_a_neuron_device_generates_through_it():
    assert needs_optimum_neuron(XLA_NEURONX, 1)
    assert not needs_optimum_neuron(NATIVE_NEURONX, 1)  # TorchNeuron: transformers on the neuron device
    assert not needs_optimum_neuron("", 1)  # no torch-neuronx: the cpu (or cuda) backend generates
    assert not needs_optimum_neuron(XLA_NEURONX, 0)  # no device: auto picks another backend


def test_the_offer_says_what_goes_where_from_which_indexes():
    offer = install_offer(setup(), "inf2", OPTIMUM_NEURON, Path("/nowhere"))
    assert not isinstance(offer, str)
    assert (offer.library, offer.python, offer.choices) == (OPTIMUM_NEURON, VENV_PYTHON, (FROM_PYPI,))
    assert offer.needed_by == "generate runs on backend neuron (Neuron SDK 2.31 or older)"
    assert offer.what == (
        "the optimum-neuron release made for the host's torch-neuronx 2.9.0.2.11.0 and the packages it needs that "
        "the Neuron venv lacks go into /home/ubuntu/.cache/neuronbench/site, for the agent only (the venv is not "
        "changed), from PyPI and https://pip.repos.neuron.amazonaws.com; the host needs internet, and a plan that "
        "would replace a package the venv has (torch, torch-neuronx, transformers, ...) is refused")


def test_declined_or_impossible_the_sentence_names_the_command_that_installs_it():
    assert missing_sentence(setup(), "inf2", OPTIMUM_NEURON, Path("/nowhere")) == (
        f"generate runs on backend neuron (Neuron SDK 2.31 or older) need optimum-neuron, which {VENV_PYTHON} on inf2 "
        f"lacks: install it with `neuronbench hosts test inf2 --install optimum-neuron` (the host needs internet)")
    without_pip = missing_sentence(setup(pip=""), "inf2", OPTIMUM_NEURON, Path("/nowhere"))
    assert "has no pip" in without_pip and "\n" not in without_pip
    assert without_pip.endswith("then run `neuronbench hosts test inf2 --install optimum-neuron` (the host needs "
                                "internet)")
