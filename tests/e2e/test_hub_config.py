"""An ``hf:ORG/NAME`` hub id: the host fetches config.json itself, here from a stand-in hub on 127.0.0.1
(tests/e2e/hub_stub.py, HF_ENDPOINT), and the Result names the bytes it read by their SHA-256."""
from __future__ import annotations

import hashlib

import pytest

from tests.conftest import DATA
from tests.e2e.hub_stub import HubStub, hub_env

pytestmark = pytest.mark.slow
BERT_CONFIG = (DATA / "models" / "tiny-bert" / "config.json").read_bytes()
INFER = ["run", "--host", "local", "--workload", "infer", "--backend", "cpu", "--batch-sizes", "2", "--warmup", "1",
         "--min-iters", "5", "--duration", "0.1", "--json"]


@pytest.fixture
def hub():
    stub = HubStub({"tiny-org/tiny-bert": BERT_CONFIG}).start()
    yield stub
    stub.stop()


def test_a_hub_config_fetched_by_the_host_is_named_by_its_sha256(run_cli, cli_env, hub, tmp_path):
    env = hub_env(cli_env, hub, str(tmp_path / "hf-home"))
    out = run_cli(*INFER, "--model", "hf:tiny-org/tiny-bert", "--task", "classification", "--seq-len", "16", env=env)
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["status"] == "ok", result["error"]
    model = result["model"]
    assert model["class"] == "BertForSequenceClassification" and model["parameters"] == 36770
    assert model["config"] == {"from": "hub", "id": "tiny-org/tiny-bert", "revision": hub.commit,
                               "sha256": hashlib.sha256(BERT_CONFIG).hexdigest()}
    # The spec carried no config (the host fetched it): config.json and nothing else, from the stand-in hub.
    assert result["spec"]["model_file"] is None
    assert ("GET", "/tiny-org/tiny-bert/resolve/main/config.json") in hub.requests
    assert {path for _, path in hub.requests} == {"/tiny-org/tiny-bert/resolve/main/config.json"}


def test_an_unknown_hub_id_is_one_sentence_and_a_stored_failed_run(run_cli, cli_env, hub, tmp_path, app_paths):
    from app.services.store import RunStore

    env = hub_env(cli_env, hub, str(tmp_path / "hf-home"))
    out = run_cli(*INFER, "--model", "hf:tiny-org/no-such-model", env=env)
    assert out.code == 1
    lines = [line for line in out.stderr.splitlines() if line.startswith("neuronbench: error:")]
    assert lines == ["neuronbench: error: run failed on local: unknown Hugging Face model 'tiny-org/no-such-model': "
                     "the hub has no such repository (or it is private); check the id, or give a local config "
                     "directory (hf:./DIR)"]
    assert "Traceback" not in out.stderr
    [result] = out.json()
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"
    with RunStore(app_paths.runs_db) as store:
        assert store.load(result["run_id"]).status == "failed"
    assert hub.requests and all(path.startswith("/tiny-org/no-such-model/") for _, path in hub.requests)
