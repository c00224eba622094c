"""Which workload processes a run starts, in order: its launch plan.

Training is one process (or one torchrun group); serve is one process that owns the server and the load;
inference and generate run one fresh process per static shape (Neuron compiles each one, and its runtime must
never be forked: DESIGN.md §6), batch sizes outer.  The supervisor (remote_agent/supervisor.py) starts them.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

from remote_agent.launch import agent_command, torchrun_command
from remote_agent.protocol import DEFAULT_INPUT_LEN, DEFAULT_OUTPUT_LEN, NodePlacement, RunSpec
from remote_agent.rundir import RunDir


class Launch:
    """One workload process (or torchrun group) the supervisor starts."""

    def __init__(self, index: int, argv: List[str], batch_size: Optional[int], seq_len: Optional[int] = None,
                 lengths: Optional[Tuple[int, int]] = None) -> None:
        self.index = index
        self.argv = argv
        self.batch_size = batch_size
        self.seq_len = seq_len
        self.lengths = lengths  # generate: (prompt tokens, new tokens)

    def describe(self) -> str:
        """`` for batch size 4`` / `` for batch size 4, sequence length 128`` / `` for batch size 4, 128 in /
        128 out`` (empty for training)."""
        if self.batch_size is None:
            return ""
        if self.lengths is not None:
            return " for batch size %d, %d in / %d out" % ((self.batch_size,) + self.lengths)
        return " for batch size %d" % self.batch_size + (
            "" if self.seq_len is None else ", sequence length %d" % self.seq_len)


def plan_launches(spec: RunSpec, run: RunDir, node: Optional[NodePlacement] = None,
                  data_parallel: bool = False) -> List[Launch]:
    """The workload processes of a run, in order.

    ``data_parallel``: each inference shape runs as ``--nproc`` processes, one per logical NeuronCore
    (torchrun), as the native Neuron stack does (capacity.native_data_parallel).
    """
    base = ["_worker", run.path]
    if spec.workload == "serve":  # one process owns the server and the load (remote_agent/workloads/serve.py)
        return [Launch(0, agent_command() + base + ["0"], None)]
    if spec.workload == "train":
        args = base + ["0"]
        # torchrun is wrapped in `_exec` so that it, too, dies with the supervisor.
        argv = (agent_command() + ["_exec", "--"] + torchrun_command(spec.nproc, args, node)
                if spec.nproc > 1 or node is not None else agent_command() + args)
        return [Launch(0, argv, None)]
    if spec.workload == "generate":
        # One fresh process per sweep point: each (batch, prompt, new tokens) is its own static shape
        # (static KV cache, Neuron graph); batch sizes outer, then prompt lengths, then output lengths.
        points = generate_points(spec)
        return [Launch(i, agent_command() + base + [str(i), "--batch-size", str(size), "--input-len", str(s_in),
                                                    "--output-len", str(s_out)], size, None, (s_in, s_out))
                for i, (size, s_in, s_out) in enumerate(points)]
    # Inference: one fresh process per static shape (Neuron compiles each one; its runtime must never
    # be forked), batch sizes outer, sequence lengths inner.
    shapes = [(size, length) for size in spec.batch_sizes for length in (spec.seq_lens or (None,))]
    launches = []
    for i, (size, length) in enumerate(shapes):
        args = base + [str(i), "--batch-size", str(size)] + ([] if length is None else ["--seq-len", str(length)])
        argv = agent_command() + (["_exec", "--"] + torchrun_command(spec.nproc, args) if data_parallel else args)
        launches.append(Launch(i, argv, size, length))
    return launches


def generate_points(spec: RunSpec) -> List[Tuple[int, int, int]]:
    """(batch, input length, output length) of every sweep point of a generate run."""
    return [(size, s_in, s_out) for size in spec.batch_sizes for s_in in (spec.input_lens or (DEFAULT_INPUT_LEN,))
            for s_out in (spec.output_lens or (DEFAULT_OUTPUT_LEN,))]
