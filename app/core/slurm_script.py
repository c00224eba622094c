"""The batch job of a Slurm run: the ``sbatch`` argv and the script it is given on stdin.

One job of N nodes, one task per node: its script finds the allocation's first
node's *address* (``scontrol show node`` -> ``NodeAddr``; a bare node name from
``scontrol show hostnames`` may not resolve on the nodes) and has ``srun`` start
``agent _slurm_node RUN_ID`` on every node with it in ``NEURONBENCH_MASTER_ADDR``.
The job's output goes to its job folder.  Every word is quoted (shlex): run ids,
paths and names are data, never shell syntax.  Pure: no I/O.
"""
from __future__ import annotations

import shlex
from collections.abc import Sequence

from app.core.slurm import SlurmSettings

JOB_NAME_PREFIX = "neuronbench-"
OUTPUT_NAME = "slurm-%j.out"  # %j: sbatch puts the job id in


def job_name(run_id: str) -> str:
    return f"{JOB_NAME_PREFIX}{run_id}"


def output_path(job_dir: str, job_id: str | None = None) -> str:
    """The job's stdout/stderr file in its job folder (with the job id filled in once known)."""
    name = OUTPUT_NAME.replace("%j", job_id) if job_id else OUTPUT_NAME
    return f"{job_dir.rstrip('/')}/{name}"


def sbatch_argv(run_id: str, nnodes: int, job_dir: str, settings: SlurmSettings) -> list[str]:
    """``sbatch --parsable ...`` for the run's job (the script comes on stdin)."""
    if nnodes < 1:
        raise ValueError(f"a Slurm job needs one node or more, not {nnodes}")
    argv = ["sbatch", "--parsable", f"--nodes={nnodes}", "--ntasks-per-node=1", f"--job-name={job_name(run_id)}",
            f"--output={output_path(job_dir)}", f"--chdir={job_dir}"]
    if settings.partition:
        argv.append(f"--partition={settings.partition}")
    if settings.account:
        argv.append(f"--account={settings.account}")
    if settings.time_minutes:
        argv.append(f"--time={settings.time_minutes}")
    if settings.exclusive:
        argv.append("--exclusive")
    return argv


def batch_script(run_id: str, nnodes: int, node_argv: Sequence[str]) -> str:
    """The job script: the master node's address, then ``srun`` of ``node_argv`` (the agent's ``_slurm_node``).

    ``--kill-on-bad-exit``: a node whose agent fails ends the job's other tasks too,
    as the SSH cluster run cancels the other nodes.
    """
    if not node_argv:
        raise ValueError("the node command is empty")
    srun = ["srun", f"--nodes={nnodes}", f"--ntasks={nnodes}", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
            *node_argv]
    return f"""#!/bin/sh
# NeuronBench run {shlex.quote(run_id)}: the agent on each of the {nnodes} nodes (srun), node 0 the master.
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
addr=$(scontrol show node "$first" | sed -n 's/.*NodeAddr=\\([^ ]*\\).*/\\1/p' | head -n 1)
NEURONBENCH_MASTER_ADDR=${{addr:-$first}}
export NEURONBENCH_MASTER_ADDR
echo "neuronbench: nodes $SLURM_JOB_NODELIST, master $first at $NEURONBENCH_MASTER_ADDR"
exec {" ".join(shlex.quote(word) for word in srun)}
"""
