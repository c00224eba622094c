"""The hosts' other transformers: 4.56 (the suite's second venv, tests/native_venv.py) through the real agent, and
a transformers or optimum-neuron too old for what was asked, refused in one sentence naming both versions.

The main venv runs transformers 5.x everywhere else.  On 4.56 the `local` host's Python is the second venv
(``NEURONBENCH_LOCAL_PYTHON``): `transformers serve` there is the 4.x CLI with chat completions and no usage, and
generate holds every row to N tokens even when the model's EOS wins every step.  hf: infer and train and the
static-cache generate on 4.56 run in tests/e2e/test_neuron_native.py (the same venv, the TorchNeuron stand-in).
An older transformers is a dist-info naming 4.48.2 put first on the path: the agent reads versions from metadata,
before it imports anything, so the refusal comes before any model is built or server started.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import DATA
from tests.e2e.test_generate import _neuron_env
from tests.e2e.test_neuron_native import native_py  # noqa: F401 (the session's second venv, made once)
from tests.serving.test_transformers_serve import FLAGS, check

pytestmark = pytest.mark.slow
MODELS = DATA / "models"
QUICK = ["--warmup", "1", "--min-iters", "3", "--duration", "0.1", "--json"]


@pytest.fixture
def on_4_56(cli_env, native_py):  # noqa: F811
    env = dict(cli_env)
    env["NEURONBENCH_LOCAL_PYTHON"] = str(native_py)
    return env


def test_transformers_4_56_serves_chat_completions_and_every_request_is_n_tokens(run_cli, on_4_56):
    done = run_cli("run", "--host", "local", *FLAGS, env=on_4_56, timeout=400)
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)[0]
    check(result, "4.56.2")
    assert result["serve"]["server"]["api"] == "chat (transformers 4.56.2 serves no /v1/completions)"


def test_transformers_4_56_generate_holds_a_llama_whose_eos_wins_every_step_to_n_tokens(run_cli, on_4_56):
    out = run_cli("run", "--host", "local", "--workload", "generate", "--model", f"file:{MODELS / 'eos_llama.py'}",
                  "--backend", "cpu", "--batch-sizes", "2", "--input-lens", "8", "--output-lens", "6", *QUICK,
                  env=on_4_56)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["env"]["transformers"] == "4.56.2"
    [point] = result["generate"]
    assert point["output_len"] == 6 and point["calls"] >= 3 and point["error"] is None
    assert point["tpot_ms"]["n"] == point["calls"] and point["itl_ms"]["n"] == 5 * point["calls"]


def old_transformers(tmp_path: Path, cli_env: dict[str, str], version: str = "4.48.2") -> dict[str, str]:
    """This venv, whose metadata says transformers ``version`` (a dist-info first on the path)."""
    site = tmp_path / "old-site"
    dist = site / f"transformers-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: transformers\nVersion: {version}\n")
    env = dict(cli_env)
    env["PYTHONPATH"] = str(site)
    return env


# generate builds its model through the same load_model as infer: the infer case stands for it.
@pytest.mark.parametrize("workload, args", [
    ("infer", ["--model", f"hf:{MODELS / 'tiny-bert'}", "--batch-sizes", "1", "--seq-lens", "16"]),
    ("serve", ["--input-lens", "8", "--output-lens", "2", "--concurrency", "1"]),
])
def test_a_transformers_older_than_4_56_is_refused_in_one_sentence_naming_both(run_cli, cli_env, tmp_path,
                                                                              workload, args):
    env = old_transformers(tmp_path, cli_env)
    out = run_cli("run", "--host", "local", "--workload", workload, *args, *QUICK, env=env)
    assert out.code != 0
    [result] = out.json()
    message = result["error"]["message"]
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec", result["error"]
    assert "need transformers 4.56 or later" in message and "has transformers 4.48.2" in message, message
    assert "\n" not in message and "Traceback" not in out.stderr
    assert message in out.stderr.strip().splitlines()[-1]
    assert run_cli("runs", "list", "--json", env=env).json()["runs"][0]["status"] == "failed"  # the run is stored
    if workload == "serve":  # refused before the model folder was written or a server started
        assert "argv" not in result["serve"]["server"] and "model_folder" not in result["serve"]["server"]


def test_an_optimum_neuron_without_the_export_api_is_refused_in_one_sentence(run_cli, cli_env, tmp_path):
    """optimum-neuron 0.3.0 (its metadata) on the stand-in host: its export is from_pretrained(export=True), which
    0.4 dropped; NeuronBench exports through get_neuron_config and export only."""
    env = _neuron_env(cli_env, tmp_path)
    site = tmp_path / "optimum-0.3"
    dist = site / "optimum_neuron-0.3.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: optimum-neuron\nVersion: 0.3.0\n")
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    out = run_cli("run", "--host", "local", "--workload", "generate", "--model", f"hf:{MODELS / 'tiny-llama'}",
                  "--task", "causal-lm", "--backend", "neuron", "--batch-sizes", "1", "--input-lens", "8",
                  "--output-lens", "2", *QUICK, env=env)
    assert out.code != 0
    [result] = out.json()
    message = result["error"]["message"]
    assert result["status"] == "failed" and result["error"]["kind"] == "backend_unavailable"
    assert message.startswith("optimum-neuron 0.3.0 is installed for ") and "needs optimum-neuron 0.4 or later" \
        in message and "get_neuron_config and export" in message, message
    assert "\n" not in message and "Traceback" not in out.stderr
    assert not (tmp_path / "optimum.log").exists()  # nothing was exported
