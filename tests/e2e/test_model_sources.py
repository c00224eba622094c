"""Any model a user brings, run for real on this computer: torchvision, Hugging Face transformers (tiny
configs in tests/data/models, random weights), the user's own file; each checked against eager."""
from __future__ import annotations

import hashlib
import json

import pytest

from remote_agent.protocol import iter_events
from tests.conftest import DATA

pytestmark = pytest.mark.slow
MODELS = DATA / "models"
QUICK_INFER = ["--workload", "infer", "--warmup", "2", "--min-iters", "20", "--duration", "0.2", "--json"]


def _only(out):
    assert out.code == 0, out.stderr
    [result] = out.json()
    assert result["status"] == "ok", result["error"]
    return result


def test_a_bert_config_traced_over_a_batch_and_sequence_length_sweep(run_cli, tmp_path):
    events = tmp_path / "events.jsonl"
    out = run_cli("run", "--host", "local", "--model", f"hf:{MODELS / 'tiny-bert'}", "--task", "classification",
                  "--backend", "cpu", "--batch-sizes", "4", "--seq-lens", "16,32", *QUICK_INFER,
                  "--events", str(events))
    result = _only(out)
    model = result["model"]
    config_text = (MODELS / "tiny-bert" / "config.json").read_bytes()
    assert model["source"] == "hf" and model["class"] == "BertForSequenceClassification"
    assert model["config"]["sha256"] == hashlib.sha256(config_text).hexdigest()
    assert model["parameters"] == 36770  # embeddings, 2 layers, pooler, a 2-label head: exact, reproducible
    assert [i["name"] for i in model["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    assert model["libraries"]["transformers"] == "5.24.0"
    # One compiled artefact per static shape (a process each): every sequence length; the batch axis is
    # ELECTRA's test, the order over both test_infer_shapes_put_batch_sizes_outer_then_sequence_lengths.
    shapes = [(row["batch_size"], row["seq_len"]) for row in result["infer"]]
    assert shapes == [(4, 16), (4, 32)]
    for row in result["infer"]:
        assert row["tokens_per_s"] == pytest.approx(row["throughput_per_s"] * row["seq_len"])
        check = row["check"]
        assert check["agrees"] is True and check["finite"] and check["inputs"] == 3
        assert check["max_rel_err"] <= check["tolerance"] == 1e-3
    # The spec the host echoes names the config by its hash; its text stays out of the event log.
    hello = next(iter_events(events.read_bytes().splitlines()))
    assert hello["spec"]["model_file"]["sha256"] == model["config"]["sha256"]
    assert "text" not in hello["spec"]["model_file"]
    assert "compiled (batch 4, seq 32)" in out.stderr  # progress names each static shape


def test_infer_shapes_put_batch_sizes_outer_then_sequence_lengths():
    """One process per static shape, in the order the Result lists them."""
    from types import SimpleNamespace

    from remote_agent.launch_plan import plan_launches
    from remote_agent.protocol import RunSpec

    spec = RunSpec(workload="infer", model="hf:bert-base-uncased", batch_sizes=(1, 4), seq_lens=(16, 32))
    launches = plan_launches(spec, SimpleNamespace(path="/run"))
    assert [(launch.batch_size, launch.seq_len) for launch in launches] == [(1, 16), (1, 32), (4, 16), (4, 32)]


@pytest.mark.parametrize("name, cls, batches", [("tiny-gpt2", "GPT2LMHeadModel", "2"),
                                                 ("tiny-llama", "LlamaForCausalLM", "2")])
def test_a_causal_lm_is_traced_for_inference_and_agrees_with_eager(run_cli, name, cls, batches):
    """GPT-2's forward takes past_key_values second: the trace wrapper binds (ids, mask) by name."""
    result = _only(run_cli("run", "--host", "local", "--model", f"hf:{MODELS / name}", "--task", "causal-lm",
                           "--seq-lens", "16", "--backend", "cpu", "--batch-sizes", batches, *QUICK_INFER))
    model = result["model"]
    assert model["class"] == cls and model["task"] == "causal-lm"
    assert [i["name"] for i in model["inputs"]] == ["input_ids", "attention_mask"]
    assert [row["batch_size"] for row in result["infer"]] == [int(b) for b in batches.split(",")]
    for row in result["infer"]:
        assert row["seq_len"] == 16 and row["tokens_per_s"] == pytest.approx(row["throughput_per_s"] * 16)
        # TorchScript on the CPU computes what eager computes, logits for every position, on inputs other
        # than the trace example: anything but a near-zero error would be a wrong trace.
        check = row["check"]
        assert check["agrees"] is True and check["finite"] and check["inputs"] == 3
        assert check["max_abs_err"] < 1e-5
    assert not [w for w in result["warnings"] if "disagrees" in w]


def test_electra_the_seeds_second_model_over_a_batch_size_sweep(run_cli):
    """Seed 003 serves ELECTRA-large's discriminator as a base model; its tiny twin here, the preset's task."""
    result = _only(run_cli("run", "--host", "local", "--model", f"hf:{MODELS / 'tiny-electra'}", "--task", "base",
                           "--backend", "cpu", "--batch-sizes", "1,2", "--seq-lens", "16", *QUICK_INFER))
    model = result["model"]
    config_text = (MODELS / "tiny-electra" / "config.json").read_bytes()
    assert model["class"] == "ElectraModel" and model["model_type"] == "electra"
    assert model["config"]["sha256"] == hashlib.sha256(config_text).hexdigest()
    # ELECTRA's embeddings (16 wide) are projected to the hidden size (32): a count only ELECTRA gives.
    assert model["parameters"] == 512 * 16 + 64 * 16 + 2 * 16 + 2 * 16 + 16 * 32 + 32 + 2 * (
        4 * (32 * 32 + 32) + 2 * 32 + 32 * 64 + 64 + 64 * 32 + 32 + 2 * 32)
    assert [i["name"] for i in model["inputs"]] == ["input_ids", "attention_mask", "token_type_ids"]
    shapes = [(row["batch_size"], row["seq_len"]) for row in result["infer"]]
    assert shapes == [(1, 16), (2, 16)]  # the sweep over lengths is BERT's test; each shape is a process
    for row in result["infer"]:
        assert row["throughput_per_s"] > 0
        assert row["tokens_per_s"] == pytest.approx(row["throughput_per_s"] * row["seq_len"])
        assert row["check"]["agrees"] is True and row["check"]["max_rel_err"] <= 1e-3


def test_a_hugging_face_model_served_on_the_xla_backend_is_checked_against_eager(run_cli):
    result = _only(run_cli("run", "--host", "local", "--model", f"hf:{MODELS / 'tiny-bert'}", "--task",
                           "classification", "--seq-lens", "16", "--backend", "xla", "--batch-sizes", "2",
                           *QUICK_INFER))
    assert result["backend"] == "xla" and result["backend_detail"]["pjrt_device"] == "CPU"
    [row] = result["infer"]
    assert row["seq_len"] == 16 and row["iterations"] >= 20
    assert row["check"]["agrees"] is True and row["check"]["precision"] == "fp32"


def test_a_torchvision_classifier_trains_with_cross_entropy(run_cli):
    result = _only(run_cli("run", "--host", "local", "--workload", "train", "--model", "torchvision:mobilenet_v3_small",
                           "--model-arg", "num_classes=10", "--backend", "cpu", "--batch-size", "2", "--steps", "4",
                           "--warmup", "1", "--workers", "0", "--json"))
    assert result["model"]["source"] == "torchvision" and result["model"]["num_classes"] == 10
    train = result["train"]
    assert train["steps_measured"] == 3 and train["throughput_samples_per_s"] > 0
    # Cross-entropy of a random 10-class classifier starts near ln(10) = 2.30.
    check = train["check"]
    assert check["finite"] and check["agrees"] is True and 1.8 < check["loss"] < 2.9


def test_a_causal_lm_trains_on_xla_with_its_own_loss_and_tokens_per_second(run_cli):
    out = run_cli("run", "--host", "local", "--workload", "train", "--model", f"hf:{MODELS / 'tiny-gpt2'}",
                  "--task", "causal-lm", "--seq-len", "32", "--backend", "xla", "--batch-size", "2",
                  "--steps", "8", "--warmup", "2", "--workers", "0", "--json")
    result = _only(out)
    train = result["train"]
    assert result["model"]["class"] == "GPT2LMHeadModel" and result["model"]["seq_len"] == 32
    assert train["compile"]["steps"] and train["window"][0] > max(train["compile"]["steps"])
    assert train["tokens_per_sample"] == 32
    assert train["throughput_tokens_per_s"] == pytest.approx(train["throughput_samples_per_s"] * 32)
    # The first step's loss (labels = input_ids, shifted inside the model) matches eager CPU fp32; a
    # random-weight LM over a 512-token vocabulary starts near ln(512).
    check = train["check"]
    assert check["finite"] and check["agrees"] is True
    assert 5.0 < check["loss"] < 7.5


def test_a_torchvision_classifier_from_its_registry(run_cli):
    result = _only(run_cli("run", "--host", "local", "--model", "torchvision:mobilenet_v3_small", "--model-arg",
                           "num_classes=10", "--backend", "cpu", "--batch-sizes", "2", *QUICK_INFER))
    assert result["model"]["source"] == "torchvision" and result["model"]["class"] == "MobileNetV3"
    assert result["model"]["inputs"] == [{"name": "x", "shape": [2, 3, 224, 224], "dtype": "float32"}]
    [row] = result["infer"]
    assert row["seq_len"] is None and row["tokens_per_s"] is None and row["check"]["agrees"] is True


def test_a_hugging_face_image_classifier_is_fed_images_at_its_configs_size(run_cli):
    result = _only(run_cli("run", "--host", "local", "--model", f"hf:{MODELS / 'tiny-vit'}", "--task", "classification",
                           "--backend", "cpu", "--batch-sizes", "2", *QUICK_INFER))
    model = result["model"]
    assert model["class"] == "ViTForImageClassification" and model["input_shape"] == [3, 32, 32]
    assert model["inputs"] == [{"name": "pixel_values", "shape": [2, 3, 32, 32], "dtype": "float32"}]
    [row] = result["infer"]
    assert row["seq_len"] is None and row["tokens_per_s"] is None and row["check"]["agrees"] is True


def test_a_users_own_file_trains_with_its_loss_and_serves(run_cli):
    path = MODELS / "two_tower.py"
    train = _only(run_cli("run", "--host", "local", "--workload", "train", "--model", f"file:{path}",
                          "--model-arg", "hidden=16", "--backend", "cpu", "--batch-size", "8", "--steps", "6",
                          "--warmup", "1", "--workers", "0", "--json"))
    model = train["model"]
    assert model["source"] == "file" and model["class"] == "TwoTower" and model["function"] == "build"
    assert model["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert model["parameters"] == 2 * (16 * 16 + 16 + 16 * 8 + 8)  # hidden=16 reached build()
    assert train["train"]["check"]["agrees"] is True and train["train"]["throughput_tokens_per_s"] is None

    infer = _only(run_cli("run", "--host", "local", "--model", f"file:{path}", "--backend", "cpu",
                          "--batch-sizes", "4", *QUICK_INFER))
    assert [i["name"] for i in infer["model"]["inputs"]] == ["input0", "input1"]
    assert infer["infer"][0]["check"]["agrees"] is True


def test_a_file_with_dict_inputs_and_a_sequence_length_reports_tokens(run_cli):
    result = _only(run_cli("run", "--host", "local", "--workload", "train", "--model",
                           f"file:{MODELS / 'tagger.py'}:make_model", "--seq-len", "20", "--backend", "cpu",
                           "--batch-size", "4", "--steps", "5", "--warmup", "1", "--workers", "0", "--json"))
    assert [i["name"] for i in result["model"]["inputs"]] == ["tokens", "mask", "tags"]
    assert result["model"]["inputs"][0]["shape"] == [4, 20]  # --seq-len reached make_model(seq_len=20)
    assert result["train"]["throughput_tokens_per_s"] == pytest.approx(
        result["train"]["throughput_samples_per_s"] * 20)


def test_a_model_whose_trace_is_wrong_is_flagged_and_its_figures_kept(run_cli, tmp_path):
    events = tmp_path / "events.jsonl"
    out = run_cli("run", "--host", "local", "--model", f"file:{MODELS / 'branchy.py'}", "--backend", "cpu",
                  "--batch-sizes", "4", *QUICK_INFER[:-1], "--events", str(events))
    assert out.code == 0, out.stderr  # the benchmark ran: its figures stand, with the warning beside them
    [result] = [e["result"] for e in iter_events(events.read_bytes().splitlines()) if e["type"] == "result"]
    [row] = result["infer"]
    assert row["throughput_per_s"] > 0
    check = row["check"]
    assert check["agrees"] is False and check["finite"] and check["max_rel_err"] > 1
    assert any("disagrees with the eager model" in w for w in result["warnings"])
    summary = out.stdout + out.stderr
    assert "WRONG" in summary and "DISAGREES" in summary and "warning: batch 4: the compiled model disagrees" in summary


def test_the_check_can_be_left_out(run_cli):
    result = _only(run_cli("run", "--host", "local", "--model", f"file:{MODELS / 'branchy.py'}", "--backend",
                           "cpu", "--batch-sizes", "2", "--no-check", *QUICK_INFER))
    assert result["spec"]["check"] is False and result["infer"][0]["check"] is None and not result["warnings"]


def test_a_stored_run_keeps_the_file_it_ran(run_cli, tmp_path, app_paths):
    """The run store keeps the file's text, so a run can be repeated after the file changed."""
    from app.services.store import RunStore

    path = tmp_path / "net.py"
    path.write_text((MODELS / "two_tower.py").read_text())
    result = _only(run_cli("run", "--host", "local", "--model", f"file:{path}", "--backend", "cpu",
                           "--batch-sizes", "2", *QUICK_INFER))
    original = path.read_text()
    path.write_text("raise SystemExit('changed since')\n")
    with RunStore(app_paths.runs_db) as store:
        stored = store.load(result["run_id"])
    assert stored.spec["model_file"]["text"] == original
    assert json.loads(json.dumps(stored.spec))["model_file"]["sha256"] == result["model"]["sha256"]


def test_text_models_are_priced_per_token_and_a_wrong_compile_is_marked_in_compare_and_reports(run_cli, tmp_path):
    assert run_cli("hosts", "add", "here", "--local", "--instance-type", "inf2.xlarge", "--region",
                   "us-east-1").code == 0
    bert = _only(run_cli("run", "--host", "here", "--model", f"hf:{MODELS / 'tiny-bert'}", "--seq-lens", "16,32",
                         "--backend", "cpu", "--batch-sizes", "2", *QUICK_INFER))
    for row in bert["cost"]["usd_per_1m_inferences"]:
        assert row["usd_per_1m_tokens"] == pytest.approx(row["usd_per_1m"] / row["seq_len"])
    out = run_cli("run", "--host", "here", "--model", f"file:{MODELS / 'branchy.py'}", "--backend", "cpu",
                  "--batch-sizes", "2", *QUICK_INFER)
    branchy = out.json()[0]

    doc = run_cli("compare", bert["run_id"], branchy["run_id"], "--json").json()
    by_seq = {row["seq_len"]: row for row in doc["rows"] if row["run_id"] == bert["run_id"]}
    assert set(by_seq) == {16, 32}
    for seq, row in by_seq.items():
        assert row["tokens_per_s"] == pytest.approx(row["throughput"] * seq)
        assert row["usd_per_1m_tokens"] == pytest.approx(row["usd_per_1m"] / seq)
        assert row["check_agrees"] is True
    [wrong] = [row for row in doc["rows"] if row["run_id"] == branchy["run_id"]]
    assert wrong["check_agrees"] is False and wrong["tokens_per_s"] is None
    text = run_cli("compare", bert["run_id"], branchy["run_id"]).stdout
    assert "TOKENS/s" in text and "WRONG" in text

    html = tmp_path / "report.html"
    assert run_cli("report", bert["run_id"], branchy["run_id"], "--format", "html", "--output", str(html)).code == 0
    page = html.read_text()
    assert "$ per 1M tokens" in page and "WRONG" in page and "the compiled model&#x27;s answers differ" in page
    csv_path = tmp_path / "report.csv"
    assert run_cli("report", bert["run_id"], branchy["run_id"], "--format", "csv", "--output", str(csv_path)).code == 0
    import csv
    lines = list(csv.DictReader(csv_path.open()))
    assert {line["check_agrees"] for line in lines} == {"True", "False"}
    assert {line["seq_len"] for line in lines} == {"16", "32", "N/A"}


def test_a_first_training_loss_the_eager_model_disagrees_with_is_flagged_at_step_one(run_cli, tmp_path):
    events = tmp_path / "events.jsonl"
    out = run_cli("run", "--host", "local", "--workload", "train", "--model", f"file:{MODELS / 'device_dependent.py'}",
                  "--backend", "xla", "--batch-size", "4", "--steps", "4", "--warmup", "1", "--workers", "0",
                  "--json", "--events", str(events))
    result = _only(out)
    check = result["train"]["check"]
    assert check["agrees"] is False and check["loss"] == pytest.approx(9 * check["reference_loss"], rel=1e-3)
    assert any("training step 1: the compiled model disagrees" in w for w in result["warnings"])
    # Said at step 1, with its figures, not only in the Result at the end.
    stream = list(iter_events(events.read_bytes().splitlines()))
    first = next(k for k, e in enumerate(stream) if e["type"] == "log" and e.get("check"))
    assert stream[first]["check"]["agrees"] is False
    assert first < next(k for k, e in enumerate(stream) if e["type"] == "step" and e["i"] == 2)
