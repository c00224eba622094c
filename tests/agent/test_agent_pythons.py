"""The agent on the Pythons the hosts carry: probe and a whole run through the real agent on each one here.

Which Pythons the hosts have (docs/neuron.md, "Versions"): the XLA-era Neuron DLAMIs (SDK <= 2.31) on Ubuntu 22.04
run Python 3.10 and on Ubuntu 24.04 Python 3.12; SDK 2.33's TorchNeuron wheels are built for 3.12-3.14, and "the
Neuron 2.33 DLAMI and the vLLM Inference DLC ship Python 3.14 on Ubuntu 26.04" (vLLM Neuron setup guide, v2.33.0).
The agent's floor is 3.8.  This machine has 3.8, 3.10, 3.12 and 3.13 (pyenv) besides the suite's 3.11; no
registry this project reaches offers a 3.14 interpreter (Debian 12 has 3.11 only), so 3.14 is covered by vermin
(nothing newer than 3.8 is used), by the 3.13 run here, and by tests/agent/test_agent_code_rules.py's scan for what
3.14 removed.  Those Pythons have no torch: the run is a serve run against a stdlib server, whose client, like the
probe, supervisor and event log, is the agent's own stdlib code.
"""
from __future__ import annotations

import json

import pytest

from tests.agent.test_neuron_stack import _pyenv_python
from tests.serving.mock_openai import MockServer

# 3.8: the agent's floor; 3.10: Ubuntu 22.04 DLAMIs; 3.12: Ubuntu 24.04 DLAMIs and TorchNeuron's oldest; 3.13: the
# newest here, next to 2.33's 3.14.  (3.9 is on no DLAMI; 3.11 is the suite's own Python, in every other test.)
VERSIONS = ["3.8", "3.10", "3.12", "3.13"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_agent_probes_and_measures_a_server_on_python(version, run_cli, cli_env):
    python = _pyenv_python(version)
    if python is None:
        pytest.skip(f"no Python {version} interpreter on this machine")
    env = dict(cli_env, NEURONBENCH_LOCAL_PYTHON=python)
    with MockServer(ttft=0.005, itl=0.001) as mock:
        done = run_cli("run", "--host", "local", "--workload", "serve", "--endpoint", f"http://127.0.0.1:{mock.port}",
                       "--concurrency", "2", "--input-lens", "8", "--output-lens", "4", "--duration", "0.2",
                       "--min-iters", "4", "--json", env=env)
    assert done.code == 0, done.stderr
    [result] = json.loads(done.stdout)
    assert result["status"] == "ok"
    assert result["env"]["python"]["version"].startswith(version + ".")  # the probe ran on it
    assert result["env"]["python"]["executable"] == python
    assert result["env"]["torch"] is None and "torch" in result["env"]["missing"]  # said, not crashed on
    [level] = result["serve"]["levels"]
    assert level["errors"] == 0 and level["completed"] >= 4 and level["output_tokens"] == 4 * level["completed"]
