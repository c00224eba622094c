"""Does a run spec fit a host?  Processes against the devices the host has.

One training process per GPU or NeuronCore (torchrun's ``--nproc_per_node``), one
model copy per NeuronCore for Neuron inference.  Asking for more processes than
devices fails deep inside the framework (a raw ``CUDA error: invalid device
ordinal`` in rank 1, or a NeuronCore allocation error); this check says it in one
sentence before anything starts.

Shared by the agent (its pre-flight, right after it probes the host) and the app
(the GUI checks the form as you type against a host's probe), so both say the
same sentence.  Stdlib only, Python 3.8+, and it takes the probe ``env`` dict.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional


def effective_backend(backend: str, env: Dict[str, Any]) -> str:
    """The backend ``auto`` picks on a host, from its probe (as the agent's registry decides at run time)."""
    if backend != "auto":
        return backend
    if env.get("torch_neuronx") and env.get("neuron_cores"):
        return "neuron"
    if env.get("gpus") and env.get("torch"):
        return "cuda"
    return "cpu"


def _plural(count: int, noun: str) -> str:
    return "%d %s%s" % (count, noun, "" if count == 1 else "s")


def nproc_problem(workload: str, backend: str, nproc: int, env: Dict[str, Any]) -> Optional[str]:
    """What is wrong with ``--nproc`` on this host (one sentence), or None when it fits.

    Args:
        workload: ``train`` or ``infer``.
        backend: the spec's backend (``auto`` is resolved from ``env``).
        nproc: processes (training) or NeuronCores (Neuron inference) per node.
        env: the host's probe (``neuron_cores``, ``gpus``, ``torch_neuronx``, ``torch``).
    """
    name = effective_backend(backend, env)
    if workload == "generate" and nproc > 1 and name != "neuron":
        return ("generate --nproc %d shards the model over NeuronCores (tensor parallel); on %s one process "
                "already uses the whole device, so run with --nproc 1" % (nproc, name))
    if workload == "infer" and nproc > 1 and name != "neuron":
        return ("inference --nproc %d spreads requests over NeuronCores; on %s one process already uses the "
                "whole device, so run with --nproc 1" % (nproc, name))
    if name == "cuda":
        have, noun, unit = env.get("gpus") or 0, "GPU", "one training process per GPU"
    elif name == "neuron":
        have, noun = env.get("neuron_cores") or 0, "NeuronCore"
        unit = {"infer": "one model copy per NeuronCore", "generate": "the model sharded over NeuronCores, tensor "
                "parallel"}.get(workload, "one training process per NeuronCore")
    else:
        return None  # cpu and xla-on-cpu processes share the CPUs: any count runs, if slowly
    if have == 0 or nproc <= have:
        return None  # no device at all is the backend's own sentence (driver, venv), not this one
    return "--nproc %d but this host has %s: run with --nproc %d or fewer (%s)" % (
        nproc, _plural(have, noun), have, unit)


# Past this many loader workers per process the seed's FakeDataset is no longer the bottleneck on any
# accelerator we measured, and each worker costs a process and its memory.
MAX_AUTO_WORKERS = 8


def default_workers(on_cpu_device: bool, usable_cpus: int, nproc: int) -> int:
    """DataLoader workers per training process when the user did not say (``--workers`` unset).

    On a CPU device the model's own threads use every core: loader workers only compete with them
    (measured on 2 vCPUs: 9.4 ms a step with 2 workers against 6.9 ms with none), so 0.  On an
    accelerator each training process keeps one vCPU for itself and its share of the rest feeds it
    (the H100 recording with 4 workers on 16 vCPUs was loader-bound: the GPU was 23–30 % busy).
    """
    if on_cpu_device:
        return 0
    share = max(1, usable_cpus) // max(1, nproc)
    return max(0, min(MAX_AUTO_WORKERS, share - 1))


# Neuron instance types with EFA, the inter-node fabric Neuron's collectives need across machines
# (aws-neuron-sdk, "How to prepare trn1.32xlarge for multi-node execution": "EFA is currently not
# available on the smaller instance sizes and they cannot be used for running multi-node jobs").
NEURON_EFA_TYPES = ("trn1.32xlarge", "trn1n.32xlarge", "trn2.48xlarge", "trn2u.48xlarge")


def multinode_problem(nnodes: int, backend: str, env: Dict[str, Any]) -> Optional[str]:
    """Why this host cannot be one node of an ``nnodes``-node run (one sentence), or None.

    Only what is known to fail: a Neuron run across machines on an instance type without EFA.
    An unknown instance type (not on EC2, metadata unreachable) is not refused.
    """
    if nnodes < 2 or effective_backend(backend, env) != "neuron":
        return None
    instance = env.get("instance_type")
    if not instance or instance in NEURON_EFA_TYPES:
        return None
    return ("a %d-node Neuron run needs EFA between the nodes, which %s does not have: use %s nodes, or run on "
            "one node" % (nnodes, instance, ", ".join(NEURON_EFA_TYPES[:-1])))


def multinode_warnings(nnodes: int, backend: str, env: Dict[str, Any]) -> List[str]:
    """What a multi-node run's figures need said beside them."""
    if nnodes < 2 or effective_backend(backend, env) not in ("neuron", "xla"):
        return []
    return ["every node compiles the graph in its first step(s), and the ranks wait for the slowest node's "
            "compile: those steps are kept out of the figures like any compiled step"]


def neuron_problem(spec: Any, env: Dict[str, Any]) -> Optional[str]:
    """Why this host cannot run the spec's Neuron stack (one sentence), or None (issue 22's refusals).

    ``--neuron-stack native`` on Inf2/Trn1, a native host whose torch and torch-neuronx families differ,
    a stack the host lacks, and dynamic shapes asked of Neuron's static graphs.
    """
    from remote_agent.neuron_stack import stack_problem

    if effective_backend(spec.backend, env) != "neuron":
        return None
    if spec.dynamic_shapes:
        return ("--dynamic-shapes cannot run on Neuron: its compiled graphs are static (torch.compile(backend="
                "\"neuron\") rejects dynamic=True, a traced graph takes only its traced shape); give the batch "
                "sizes and lengths to sweep instead, one compile each")
    if not env.get("neuron_cores"):
        return None  # no device at all: the backend's own sentence (driver, venv) says it
    return stack_problem(spec.neuron_stack, env)


def native_data_parallel(spec: Any, env: Dict[str, Any]) -> bool:
    """Whether an inference runs one process per logical NeuronCore: ``--nproc N`` on the native Neuron stack.

    TorchNeuron has no ``torch_neuronx.DataParallel`` (the XLA stack's, one process splitting each batch):
    each process holds its own core (``NEURON_RT_VISIBLE_CORES``), and the requests of all are merged.
    """
    return (spec.workload == "infer" and spec.nproc > 1 and effective_backend(spec.backend, env) == "neuron"
            and (spec.neuron_stack or env.get("neuron_stack")) == "native")
