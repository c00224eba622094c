"""Does a spec fit a host: processes against devices, loader workers from vCPUs (remote_agent/capacity.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from remote_agent.capacity import default_workers, effective_backend, nproc_problem

H100_FAILED = Path(__file__).resolve().parents[1] / "data" / "runs" / "h100-train-nproc2-on-1-gpu-failed.events.jsonl"


def h100_env() -> dict:
    """The probe of the one-H100 machine where `--nproc 2` died in rank 1 (a real recording)."""
    for line in H100_FAILED.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "probe":
            return event["env"]
    raise AssertionError("the recording has no probe")


def test_the_recorded_h100_failure_is_refused_in_one_sentence_naming_both_numbers():
    env = h100_env()
    assert env["gpus"] == 1
    assert nproc_problem("train", "cuda", 2, env) == \
        "--nproc 2 but this host has 1 GPU: run with --nproc 1 or fewer (one training process per GPU)"
    assert nproc_problem("train", "auto", 2, env).startswith("--nproc 2 but this host has 1 GPU")
    assert nproc_problem("train", "cuda", 1, env) is None


@pytest.mark.parametrize("workload, unit", [("train", "one training process per NeuronCore"),
                                            ("infer", "one model copy per NeuronCore")])
def test_neuroncores_are_counted_from_the_probe(workload, unit):
    env = {"neuron_cores": 2, "torch_neuronx": "2.9.0", "gpus": 0, "torch": "2.9.0"}
    assert nproc_problem(workload, "neuron", 4, env) == \
        f"--nproc 4 but this host has 2 NeuronCores: run with --nproc 2 or fewer ({unit})"
    assert nproc_problem(workload, "auto", 2, env) is None


def test_cpu_processes_and_a_host_without_the_device_are_not_this_checks_business():
    cpu_host = {"neuron_cores": 0, "gpus": 0, "torch": "2.9.0"}
    assert nproc_problem("train", "cpu", 8, cpu_host) is None
    assert nproc_problem("train", "cuda", 2, cpu_host) is None  # "no GPU" is the backend's own sentence
    assert effective_backend("auto", cpu_host) == "cpu"


def test_inference_over_several_processes_is_a_neuron_feature():
    gpu_host = {"gpus": 4, "torch": "2.9.0"}
    assert "run with --nproc 1" in nproc_problem("infer", "cuda", 2, gpu_host)


@pytest.mark.parametrize("on_cpu, cpus, nproc, expected", [
    (True, 2, 1, 0),      # the 2-vCPU case: workers only slowed the model down
    (True, 96, 1, 0),
    (False, 16, 1, 8),    # the H100 host: the loader bounded the seed's loop with 4
    (False, 8, 2, 3),     # trn1.2xlarge, torchrun over both NeuronCores
    (False, 4, 2, 1),     # inf2.xlarge
    (False, 128, 32, 3),  # trn1.32xlarge, one process per NeuronCore
    (False, 2, 4, 0),
])
def test_default_loader_workers_follow_the_hosts_vcpus_and_processes(on_cpu, cpus, nproc, expected):
    assert default_workers(on_cpu, cpus, nproc) == expected


def test_a_node_of_a_multi_node_neuron_run_refuses_an_instance_type_without_efa():
    from remote_agent.capacity import multinode_problem, multinode_warnings

    trn1_small = {"instance_type": "trn1.2xlarge", "torch_neuronx": "2.9.0", "neuron_cores": 2}
    assert multinode_problem(2, "auto", trn1_small).startswith(
        "a 2-node Neuron run needs EFA between the nodes, which trn1.2xlarge does not have")
    assert multinode_problem(1, "neuron", trn1_small) is None  # one node needs no fabric
    assert multinode_problem(4, "neuron", dict(trn1_small, instance_type="trn1.32xlarge")) is None
    assert multinode_problem(2, "neuron", dict(trn1_small, instance_type=None)) is None  # unknown: not refused
    assert multinode_problem(2, "cpu", trn1_small) is None
    assert "kept out of the figures" in multinode_warnings(2, "neuron", trn1_small)[0]
    assert multinode_warnings(2, "cpu", trn1_small) == []


def test_neuron_nodes_get_the_efa_and_collectives_environment_of_awss_multi_node_samples():
    from remote_agent.multinode import node_env
    from remote_agent.protocol import NodePlacement, RunSpec

    node = NodePlacement(node_rank=1, nnodes=2, master_addr="10.0.0.5", master_port=41000, comm_port=46820)
    env = {"torch_neuronx": "2.9.0", "neuron_cores": 32}
    extra = node_env(node, RunSpec(backend="neuron", nnodes=2), env)
    assert extra["FI_PROVIDER"] == "efa" and extra["FI_EFA_USE_DEVICE_RDMA"] == "1" and extra["FI_EFA_FORK_SAFE"] == "1"
    assert extra["NEURON_RT_ROOT_COMM_ID"] == "10.0.0.5:46820" and extra["MALLOC_ARENA_MAX"] == "64"
    assert extra["NEURON_COMPILE_CACHE_URL"] == "/var/tmp/neuron-compile-cache"  # the node's own disk
    shared = node_env(node, RunSpec(backend="neuron", nnodes=2, compile_cache="/fsx/neuron-cache"), env)
    assert "NEURON_COMPILE_CACHE_URL" not in shared  # the user named a shared cache: the backend sets it
    assert "FI_PROVIDER" not in node_env(node, RunSpec(backend="cpu", nnodes=2), env)
    assert node_env(None, RunSpec(backend="neuron"), env) == {}
