"""A user's own model file and a local Hugging Face config, run on another machine over the real sshd:
their text travels inside the run spec, so the host needs neither the file nor the internet."""
from __future__ import annotations

import hashlib

import pytest

from tests.conftest import DATA
from tests.e2e.conftest import add_host, remote_profile, remote_runs_dir

pytestmark = pytest.mark.slow
MODELS = DATA / "models"


def test_a_users_file_trains_and_serves_and_a_local_config_serves_over_ssh(sshd, data_dir, run_cli, ssh_env, tmp_path):
    add_host(data_dir, remote_profile(sshd))
    path = tmp_path / "my_project" / "towers.py"  # nowhere the host could read it
    path.parent.mkdir()
    path.write_text((MODELS / "two_tower.py").read_text())
    out = run_cli("run", "--host", "box", "--workload", "train", "--model", f"file:{path}", "--backend", "cpu",
                  "--batch-size", "8", "--steps", "5", "--warmup", "1", "--workers", "0", "--json",
                  "--accept-new-host-key", env=ssh_env)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["host"] == "box" and result["status"] == "ok" and result["train"]["steps_measured"] == 4
    assert result["model"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert result["train"]["check"]["agrees"] is True
    # The host wrote the file it received into the run's own folder, and ran that.
    ran = remote_runs_dir(sshd) / result["run_id"] / "model" / "towers.py"
    assert ran.read_text() == path.read_text()

    # The same file served: traced on the host (TorchScript), at two batch sizes, each checked against eager.
    out = run_cli("run", "--host", "box", "--workload", "infer", "--model", f"file:{path}", "--model-arg",
                  "hidden=16", "--backend", "cpu", "--batch-sizes", "1,4", "--warmup", "1", "--min-iters", "10",
                  "--duration", "0.1", "--json", env=ssh_env)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["host"] == "box" and result["status"] == "ok"
    assert result["model"]["parameters"] == 2 * (16 * 16 + 16 + 16 * 8 + 8)  # hidden=16 reached build() there
    assert [row["batch_size"] for row in result["infer"]] == [1, 4]
    for row in result["infer"]:
        assert row["iterations"] >= 10 and row["throughput_per_s"] > 0 and row["check"]["agrees"] is True
    assert (remote_runs_dir(sshd) / result["run_id"] / "model" / "towers.py").read_text() == path.read_text()

    out = run_cli("run", "--host", "box", "--workload", "infer", "--model", f"hf:{MODELS / 'tiny-bert'}",
                  "--task", "masked-lm", "--seq-len", "16", "--backend", "cpu", "--batch-sizes", "2",
                  "--warmup", "1", "--min-iters", "10", "--duration", "0.1", "--json", env=ssh_env)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["model"]["class"] == "BertForMaskedLM" and result["model"]["config"]["from"] == "spec"
    assert result["infer"][0]["tokens_per_s"] > 0 and result["infer"][0]["check"]["agrees"] is True
