"""Issue 22's done-when: the same `neuronbench run` spec, unchanged, on a native (TorchNeuron, Trn2) stand-in
host and an XLA (torch-xla + trace, Inf2) stand-in host, each over a real sshd; every Result names its stack,
its compile (cold, then warm or loaded), its fallbacks and its check, and `compare` shows them side by side.

Each "host" is an sshd on its own loopback address whose sessions see that host's Neuron stand-ins
(tests/e2e/test_neuron_native.py's neuron_env: listing, /dev/neuron0, the stand-in library) and whose
registered Python is that stack's: the suite's torch 2.13 venv for native, this venv (torch 2.9) for XLA.
"""
from __future__ import annotations

import json
import sys

import pytest

from tests.conftest import DATA
from tests.e2e.conftest import add_host, remote_profile
from tests.e2e.sshd import make_server
from tests.e2e.test_neuron_native import NATIVE_STAND_INS, XLA_STAND_INS, neuron_env
from tests.native_venv import native_python

pytestmark = pytest.mark.slow
SPEC = ["--workload", "infer", "--backend", "neuron", "--model", f"file:{DATA / 'models' / 'two_tower.py'}",
        "--batch-sizes", "2", "--warmup", "1", "--min-iters", "10", "--duration", "0.1",
        "--neuron-cc-flags=--auto-cast none"]
SESSION_VARS = ("PATH", "PYTHONPATH", "NEURONBENCH_NEURON_DEVICE_GLOB", "NEURONBENCH_FAKE_NEURON_LS",
                "NEURONBENCH_FAKE_NEURON_CORES", "NEURONBENCH_FAKE_NEURONX_LOG", "NEURONBENCH_NEURON_VENV_GLOB")


@pytest.fixture(scope="module")
def native_py():
    python, why = native_python()
    if python is None:
        pytest.skip(why)
    return python


def test_one_spec_on_a_native_and_an_xla_host_over_ssh_compared_side_by_side(tmp_path, ssh_client, data_dir,
                                                                              run_cli, ssh_env, native_py):
    hosts = {"trn2": ("neuron-ls-trn2-3xlarge.json", NATIVE_STAND_INS, native_py, "trn2.3xlarge", "127.0.0.2"),
             "inf2": ("neuron-ls-inf2-xlarge.json", XLA_STAND_INS, sys.executable, "inf2.xlarge", "127.0.0.3")}
    servers = []
    try:
        for name, (listing, stand_ins, python, instance, address) in hosts.items():
            env = neuron_env({}, tmp_path, listing, stand_ins, python, instance, name=name)
            server = make_server(tmp_path / f"sshd-{name}", ssh_client.key, address=address,
                                 env={k: env[k] for k in SESSION_VARS})
            servers.append(server.start())
            add_host(data_dir, remote_profile(server, name, python=str(python)))
        runs = [run_cli("run", "--host", "trn2", "--host", "inf2", *SPEC, "--json", "--accept-new-host-key",
                        env=ssh_env) for _ in range(2)]
    finally:
        for server in servers:
            server.stop()
    for out in runs:
        assert out.code == 0, out.stderr
    (native, xla), (native2, xla2) = (out.json() for out in runs)
    for result, stack in ((native, "native"), (xla, "xla"), (native2, "native"), (xla2, "xla")):
        assert result["status"] == "ok" and result["backend"] == "neuron"
        assert result["env"]["neuron_stack"] == stack and result["backend_detail"]["stack"] == stack
        row = result["infer"][0]
        assert row["check"]["agrees"] is True and row["check"]["precision"] == "fp32"  # --auto-cast none
        assert result["backend_detail"].get("fallback_ops", []) == []
    assert native["backend_detail"]["torch"].startswith("2.13") and xla["backend_detail"]["torch"].startswith("2.9")
    assert native["backend_detail"]["compiler_flags_via"] == "NEURON_CC_FLAGS"
    assert xla["backend_detail"]["compiler_flags_via"] == "compiler_args"
    assert xla["infer"][0]["compile"]["compiler_args"] == ["--auto-cast", "none"]
    states = [r["infer"][0]["compile"]["state"] for r in (native, xla, native2, xla2)]
    assert states == ["cold", "cold", "warm", "loaded"]

    ids = [r["run_id"] for r in (native, xla, native2, xla2)]
    text = run_cli("compare", *ids, env=ssh_env)
    assert text.code == 0, text.stderr
    lines = {line.split()[0]: line for line in text.stdout.splitlines() if line.split() and line.split()[0] in ids}
    assert "STACK" in text.stdout
    for run_id, cell in zip(ids, ("native, cold", "xla, cold", "native, warm", "xla, loaded"), strict=True):
        assert cell in lines[run_id], text.stdout
    doc = json.loads(run_cli("compare", *ids, "--json", env=ssh_env).stdout)
    assert [(r["stack"], r["compile_state"]) for r in doc["rows"]] == [
        ("native", "cold"), ("xla", "cold"), ("native", "warm"), ("xla", "loaded")]
