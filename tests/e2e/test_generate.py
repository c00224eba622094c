"""The generate workload for real: transformers' generate() on this computer's CPU and on torch-xla's CPU device,
tiny Llama and GPT-2 configs with random weights, through the real agent zipapp; every call held to N tokens."""
from __future__ import annotations

import json

import pytest

from remote_agent.protocol import iter_events
from tests.conftest import DATA

pytestmark = pytest.mark.slow
MODELS = DATA / "models"
QUICK = ["--workload", "generate", "--warmup", "1", "--min-iters", "4", "--duration", "0.1", "--json"]


def _result(out, status="ok"):
    [result] = out.json()
    assert result["status"] == status, result["error"]
    return result


def test_a_tiny_llama_sweep_on_cpu_counts_every_token_and_prices_output_tokens(run_cli, tmp_path):
    assert run_cli("hosts", "add", "here", "--local", "--instance-type", "c7i.xlarge", "--region",
                   "us-east-1").code == 0
    events = tmp_path / "events.jsonl"
    out = run_cli("run", "--host", "here", "--model", f"hf:{MODELS / 'tiny-llama'}", "--task", "causal-lm",
                  "--backend", "cpu", "--batch-sizes", "2", "--input-lens", "8", "--output-lens", "1,5",
                  *QUICK, "--events", str(events))
    assert out.code == 0, out.stderr
    result = _result(out)
    assert result["model"]["class"] == "LlamaForCausalLM"
    points = result["generate"]
    # Two points (one process each); the sweep's order over every axis: test_generate_points_put_batch_sizes_outer.
    assert [(p["batch_size"], p["input_len"], p["output_len"]) for p in points] == [(2, 8, 1), (2, 8, 5)]
    for p in points:
        assert p["calls"] >= 4 and p["error"] is None and p["stack"] == "transformers generate, eager, dynamic cache"
        assert p["ttft_ms"]["n"] == p["calls"] and p["ttft_ms"]["p50"] > 0
        assert p["output_tok_s"] > 0 and p["prefill_tok_s"] > 0
        assert p["load_s"] is not None and p["first_call_s"] > 0 and p["compile_s"] == 0.0
        check = p["check"]
        # Eager on the CPU in fp32 is the reference itself: the same logits, the same greedy tokens.
        assert check["agrees"] is True and check["max_abs_err"] < 1e-5 and check["greedy_agreement"] == 1.0
        assert p["prefill_flops_per_row"] > 0 and p["decode_flops_per_token"] > 0
        if p["output_len"] == 1:  # one token: no decode step, so no TPOT and no decode rate (never 0)
            assert p["tpot_ms"]["n"] == 0 and p["tpot_ms"]["p50"] is None and p["decode_tok_s"] is None
        else:
            assert p["tpot_ms"]["n"] == p["calls"] and p["decode_tok_s"] > 0
            assert p["itl_ms"]["n"] == 4 * p["calls"]  # N - 1 gaps per call, never the gaps between calls
    cost = result["cost"]
    assert cost["instance_type"] == "c7i.xlarge" and cost["usd_per_hour"] > 0
    for row, p in zip(cost["usd_per_1m_output_tokens"], points, strict=True):
        assert row["usd_per_1m_output_tokens"] == pytest.approx(cost["usd_per_hour"] / 3600 / p["output_tok_s"] * 1e6)
        assert row["usd_per_1m_total_tokens"] < row["usd_per_1m_output_tokens"]
    # The live view's feed: one gen_call per first, warm-up and (throttled) measured call, each with TTFT.
    calls = [e for e in iter_events(events.read_bytes().splitlines()) if e["type"] == "gen_call"]
    assert {(e["batch_size"], e["output_len"], e["stage"]) for e in calls} >= {(2, 5, "first"), (2, 5, "warmup"),
                                                                             (2, 5, "measure")}
    assert all(e["ttft_ms"] > 0 for e in calls)
    assert "TTFT p50 ms" in run_cli("runs", "show", result["run_id"]).stdout

    compare = run_cli("compare", result["run_id"], "--json")
    assert compare.code == 0, compare.stderr
    rows = json.loads(compare.stdout)["rows"]
    assert len(rows) == 2 and all(r["unit"] == "output tok/s" for r in rows)
    for r in rows:
        assert r["throughput"] == r["output_tok_s"] and r["usd_per_1m"] == r["usd_per_1m_output_tokens"]
        assert r["ttft_p50_ms"] > 0 and r["ttft_p99_ms"] >= r["ttft_p50_ms"]
    text = run_cli("compare", result["run_id"]).stdout
    assert "$/1M OUTPUT" in text and "per 1M prompt + output tokens" in text


def test_generate_points_put_batch_sizes_outer_then_prompt_then_output_lengths():
    """The order the sweep runs (and the Result lists) its points: one process each, in this order."""
    from remote_agent.launch_plan import generate_points
    from remote_agent.protocol import RunSpec

    spec = RunSpec(workload="generate", batch_sizes=(1, 2), input_lens=(8, 16), output_lens=(1, 5))
    assert generate_points(spec) == [(1, 8, 1), (1, 8, 5), (1, 16, 1), (1, 16, 5), (2, 8, 1), (2, 8, 5),
                                     (2, 16, 1), (2, 16, 5)]


@pytest.mark.parametrize("name", ["tiny-gpt2", "tiny-llama"])
def test_torch_xla_generates_with_a_static_cache_compiled_apart(run_cli, name):
    out = run_cli("run", "--host", "local", "--model", f"hf:{MODELS / name}", "--task", "causal-lm",
                  "--backend", "xla", "--batch-sizes", "2", "--input-lens", "8", "--output-lens", "4", *QUICK,
                  timeout=600)
    assert out.code == 0, out.stderr
    [point] = _result(out)["generate"]
    assert point["stack"] == "transformers generate on torch-xla, static cache" and point["cache"] == "static"
    # The graphs compile inside the first call, counted by torch-xla; the timed calls compile nothing new.
    assert point["compile_s"] > 0 and point["first_call_s"] >= point["compile_s"]
    assert point["ttft_ms"]["p50"] < point["first_call_s"] * 1000
    assert point["check"]["agrees"] is True and point["check"]["max_rel_err"] < 1e-3
    assert point["calls"] >= 4 and point["tpot_ms"]["n"] == point["calls"]


def test_a_model_whose_eos_fires_every_step_is_still_held_to_n_tokens(run_cli):
    """eos_llama scores its EOS highest at every step: transformers alone stops after one token."""
    out = run_cli("run", "--host", "local", "--model", f"file:{MODELS / 'eos_llama.py'}", "--backend", "cpu",
                  "--batch-sizes", "2", "--input-lens", "8", "--output-lens", "6", *QUICK)
    assert out.code == 0, out.stderr
    [point] = _result(out)["generate"]
    assert point["output_len"] == 6 and point["tpot_ms"]["n"] == point["calls"] and point["itl_ms"]["n"] == 5 * \
        point["calls"]


def test_a_model_that_stops_early_fails_the_run_in_one_sentence(run_cli):
    out = run_cli("run", "--host", "local", "--model", f"file:{MODELS / 'stops_early.py'}", "--backend", "cpu",
                  "--batch-sizes", "1", "--input-lens", "8", "--output-lens", "6", *QUICK)
    assert out.code != 0
    result = _result(out, "failed")
    message = result["error"]["message"]
    assert message.startswith("batch 1, 8 in / 6 out: a call produced 2 new tokens per row") and "\n" not in message
    assert "would be false" in message and [p["error"]["message"] for p in result["generate"]] == [message]
    assert message in out.stderr
    assert run_cli("runs", "list", "--json").json()["runs"][0]["status"] == "failed"  # the failed run is stored


def test_an_oom_at_one_batch_size_names_it_and_the_others_are_still_measured(run_cli):
    out = run_cli("run", "--host", "local", "--model", f"file:{MODELS / 'oom_at_batch.py'}", "--backend", "cpu",
                  "--batch-sizes", "4,1", "--input-lens", "8", "--output-lens", "3", *QUICK)
    assert out.code != 0
    result = _result(out, "partial")  # the finished points are kept (tests/e2e/test_partial_sweeps.py)
    assert result["error"]["kind"] == "oom"
    assert result["error"]["message"].startswith("out of memory at batch 4, 8 in / 3 out: it needs about ")
    assert "KV cache" in result["error"]["message"] and "other sweep points are still measured" in \
        result["error"]["message"]
    by_batch = {p["batch_size"]: p for p in result["generate"]}  # the point after the OOM still measured
    assert by_batch[1]["output_tok_s"] > 0
    assert by_batch[4]["error"]["kind"] == "oom" and by_batch[4]["output_tok_s"] is None


@pytest.mark.parametrize("args, sentence", [
    (["--model", f"hf:{MODELS / 'tiny-bert'}", "--task", "base", "--input-lens", "8", "--output-lens", "4"],
     "generate needs a causal language model: --task base builds no language-model head"),
    (["--model", f"hf:{MODELS / 'tiny-llama'}", "--input-lens", "60", "--output-lens", "8"],
     "60 prompt tokens + 8 new tokens = 68 positions, past "),
    (["--model", f"file:{MODELS / 'two_tower.py'}", "--input-lens", "8", "--output-lens", "4"],
     "generate needs a causal language model: "),
    (["--model", "timm:resnet18"], "generate needs a causal language model "),
])
def test_bad_inputs_are_refused_in_one_sentence(run_cli, args, sentence):
    out = run_cli("run", "--host", "local", "--backend", "cpu", "--batch-sizes", "1", *QUICK, *args)
    assert out.code != 0
    assert sentence in out.stderr
    line = next(line for line in out.stderr.splitlines() if sentence in line)
    assert len(line) < 400


def test_the_same_generate_spec_over_ssh_and_here_compares_dollars_per_million_output_tokens(
        sshd, data_dir, run_cli, ssh_env):
    """The issue's "done when": the spec that ran here runs on another host over SSH; compare prices both."""
    from tests.e2e.conftest import add_host, remote_profile

    add_host(data_dir, remote_profile(sshd, instance_type="g5.xlarge", region="us-east-1"))
    assert run_cli("hosts", "add", "here", "--local", "--instance-type", "c7i.xlarge", "--region",
                   "us-east-1").code == 0
    spec = ["--model", f"hf:{MODELS / 'tiny-llama'}", "--task", "causal-lm", "--backend", "cpu", "--batch-sizes",
            "2", "--input-lens", "8", "--output-lens", "4", *QUICK]
    out = run_cli("run", "--host", "here", "--host", "box", *spec, "--accept-new-host-key", env=ssh_env)
    assert out.code == 0, out.stderr
    results = out.json()
    assert sorted(r["host"] for r in results) == ["box", "here"]
    for result in results:
        assert result["status"] == "ok" and result["generate"][0]["calls"] >= 4
    compare = run_cli("compare", *(r["run_id"] for r in results), "--json", env=ssh_env)
    assert compare.code == 0, compare.stderr
    rows = json.loads(compare.stdout)["rows"]
    assert sorted(r["instance_type"] for r in rows) == ["c7i.xlarge", "g5.xlarge"]
    for row in rows:
        assert row["usd_per_1m_output_tokens"] > 0 and row["tpot_p50_ms"] > 0
        assert row["usd_per_1m_output_tokens"] == pytest.approx(row["usd_per_hour"] / 3600 / row["output_tok_s"] * 1e6)
    assert next(r for r in rows if r["run_id"] != json.loads(compare.stdout)["baseline"])["speedup_vs_baseline"] > 0
    text = run_cli("compare", *(r["run_id"] for r in results), env=ssh_env).stdout
    assert "g5.xlarge" in text and "c7i.xlarge" in text and "$/1M OUTPUT" in text


def _neuron_env(cli_env, tmp_path, with_optimum=True):
    """This computer dressed as an inf2.xlarge (tests/e2e/test_neuron_glue.py's stand-ins), optimum-neuron's
    stand-in on the path or not, its compiled-model cache in tmp_path."""
    import os
    import sys
    from pathlib import Path

    from tests.conftest import DOUBLES_BIN, REPO

    devices = json.loads((DATA / "neuron" / "neuron-ls-inf2-xlarge.json").read_text())
    for device in devices:
        device["neuron_processes"] = []
    listing = tmp_path / "neuron-ls.json"
    listing.write_text(json.dumps(devices))
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "neuron0").write_text("")
    bindir = tmp_path / "host-bin"
    bindir.mkdir()
    (bindir / "neuron-ls").symlink_to(DOUBLES_BIN / "neuron-ls")
    stand_ins = REPO / "tests" / "doubles" / "python"
    python_path = [str(stand_ins)] if with_optimum else []
    if not with_optimum:  # torch_neuronx's stand-in alone: a Neuron venv without optimum-neuron
        only = tmp_path / "neuronx-only"
        only.mkdir()
        for name in ("torch_neuronx", "torch_neuronx-2.9.0.2.11.0+testdouble.dist-info"):
            (only / name).symlink_to(stand_ins / name)
        python_path = [str(only)]
    env = dict(cli_env)
    env.update({
        "PATH": f"{bindir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        "PYTHONPATH": os.pathsep.join(python_path + [env.get("PYTHONPATH", "")]),
        "NEURONBENCH_NEURON_DEVICE_GLOB": str(tmp_path / "dev" / "neuron*"),
        "NEURONBENCH_FAKE_NEURON_LS": str(listing),
        "NEURONBENCH_NEURON_MODEL_CACHE": str(tmp_path / "neuron-models"),
        "NEURONBENCH_FAKE_OPTIMUM_LOG": str(tmp_path / "optimum.log"),
    })
    return env


def test_neuron_generates_through_optimum_neuron_exported_at_the_point_and_cached(run_cli, cli_env, tmp_path):
    """The optimum-neuron path on the stand-in: one export per (batch, prompt + output length, cores), kept on
    the host, so the second run loads the compiled model instead of compiling it again."""
    env = _neuron_env(cli_env, tmp_path)
    spec = ["--model", f"hf:{MODELS / 'tiny-llama'}", "--task", "causal-lm", "--backend", "neuron", "--nproc", "2",
            "--batch-sizes", "2", "--input-lens", "8", "--output-lens", "4", *QUICK]
    first = run_cli("run", "--host", "local", *spec, env=env)
    assert first.code == 0, first.stderr
    result = _result(first)
    [point] = result["generate"]
    assert point["stack"] == "optimum-neuron 0.4.5+testdouble NeuronModelForCausalLM, tensor parallel 2"
    assert result["backend_detail"]["compile_cache"] == "miss" and point["compile_s"] > 0
    assert point["tpot_ms"]["n"] == point["calls"]  # N tokens held by EOS off: min_new_tokens is ignored there
    # On-device sampling returns no logits: agreement is reported, the logit check says why it is not judged.
    assert point["check"]["agrees"] is None and "on-device sampling" in point["check"]["note"]
    assert point["check"]["greedy_agreement"] == 1.0
    # optimum-neuron 0.4's export: the shape by get_neuron_config, the compile by export; then a plain load.
    shape = {"batch_size": 2, "sequence_length": 12, "tp_degree": 2, "torch_dtype": "float32"}
    log = [json.loads(line) for line in (tmp_path / "optimum.log").read_text().splitlines()]
    assert log == [{"call": "get_neuron_config", **shape}, {"call": "export", **shape, "load_weights": False},
                   {"call": "from_pretrained", **shape}]
    [cached] = list((tmp_path / "neuron-models").iterdir())
    assert "-b2-s12-tp2-fp32-" in cached.name

    second = run_cli("run", "--host", "local", *spec, env=env)
    assert second.code == 0, second.stderr
    result = _result(second)
    assert result["backend_detail"]["compile_cache"] == "hit" and result["generate"][0]["compile_s"] == 0.0
    log = [json.loads(line) for line in (tmp_path / "optimum.log").read_text().splitlines()]
    assert [e["call"] for e in log[3:]] == ["from_pretrained"]  # no second export: loaded from the host's cache


def test_the_stand_in_keeps_optimum_neuron_0_4_5s_export_and_static_shape_rules(tmp_path, caplog):
    """0.4.5's from_pretrained exports nothing (the 0.0.x call the product made before issue 27 fails as the real
    one does); get_neuron_config + export do; then a larger batch or a longer prompt is refused as 0.4.5 refuses it."""
    import sys

    import torch
    import transformers

    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "tests" / "doubles" / "python"))
    try:
        from optimum.neuron import NeuronModelForCausalLM
    finally:
        sys.path.pop(0)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, eos_token_id=None)
    folder = tmp_path / "m"
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    with pytest.raises(OSError, match=r"does not appear to have a file named neuron_config\.json"):
        NeuronModelForCausalLM.from_pretrained(folder, export=True, batch_size=2, sequence_length=12,
                                               tensor_parallel_size=2, torch_dtype="fp32")
    assert "Ignoring the following kwargs as they are not supported by neuron" in caplog.text
    neuron_config = NeuronModelForCausalLM.get_neuron_config(str(folder), batch_size=2, sequence_length=12,
                                                             tensor_parallel_size=2)
    NeuronModelForCausalLM.export(str(folder), neuron_config).save_pretrained(tmp_path / "compiled")
    model = NeuronModelForCausalLM.from_pretrained(tmp_path / "compiled")
    ids = torch.zeros((3, 8), dtype=torch.long)
    with pytest.raises(ValueError, match=r"batch_size \(3\) exceeds the model static batch size \(2\)"):
        model.generate(ids, max_new_tokens=4)
    with pytest.raises(ValueError, match=r"input sequence length \(13\) exceeds the model static sequence length"):
        model.generate(torch.zeros((2, 13), dtype=torch.long), max_new_tokens=1)
    with pytest.raises(ValueError, match="Left padding is not supported"):
        model.generate(ids[:2], attention_mask=torch.tensor([[0] + [1] * 7] * 2), max_new_tokens=4)
    calls = []

    def criterion(input_ids, scores):
        calls.append(input_ids.shape[1])
        return torch.zeros(input_ids.shape[0], dtype=torch.bool)

    out = model.generate(ids[:2], max_new_tokens=4, min_new_tokens=4, stopping_criteria=[criterion])
    assert out.shape == (2, 12) and calls == [9, 10, 11, 12]  # stopping criteria run every step


def test_neuron_without_optimum_neuron_offers_to_install_it(run_cli, cli_env, tmp_path):
    env = _neuron_env(cli_env, tmp_path, with_optimum=False)
    out = run_cli("run", "--host", "local", "--model", f"hf:{MODELS / 'tiny-llama'}", "--backend", "neuron",
                  "--batch-sizes", "1", "--input-lens", "8", "--output-lens", "4", *QUICK, env=env)
    assert out.code != 0
    result = _result(out, "failed")
    assert result["error"]["kind"] == "backend_unavailable"
    assert result["error"]["message"].startswith("backend neuron generates through optimum-neuron, which is not "
                                                 "installed for ")
    assert "pip install optimum-neuron --extra-index-url https://pip.repos.neuron.amazonaws.com" in \
        result["error"]["message"]
