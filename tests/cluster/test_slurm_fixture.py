"""The test Slurm itself: two nodes that a 2-node job really spans (the ground the Slurm run tests stand on)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_a_two_node_job_runs_one_task_on_each_node(slurm, tmp_path):
    out = slurm.command("srun", "--nodes", "2", "--ntasks-per-node", "1", "sh", "-c",
                        "echo $SLURM_NODEID $SLURMD_NODENAME", timeout=60)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.split("\n")[:2]) == ["0 n1", "1 n2"]
