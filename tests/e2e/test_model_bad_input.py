"""A model a user brings, wrong in every way we can think of: one sentence each, a non-zero exit, no
traceback, and (when the host was reached) the failed run stored with what it learnt."""
from __future__ import annotations

import json

import pytest

from tests.conftest import DATA

MODELS = DATA / "models"
INFER = ["run", "--host", "local", "--workload", "infer", "--backend", "cpu", "--batch-sizes", "2",
         "--warmup", "1", "--min-iters", "5", "--duration", "0.1"]


def _one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith("neuronbench: error:")]
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    return lines[0]


# ------------------------------------------------------------- refused on this computer (exit 2)
def test_refused_before_anything_starts(run_cli, tmp_path):
    no_type = tmp_path / "no-type"
    no_type.mkdir()
    (no_type / "config.json").write_text(json.dumps({"hidden_size": 32, "vocab_size": 100}))
    empty_dir = tmp_path / "empty"
    empty_dir.mkdir()
    huge = tmp_path / "huge.py"
    huge.write_text("# " + "x" * (600 * 1024) + "\n")
    cases = [
        (["--model", f"file:{tmp_path / 'missing.py'}"], "model file", "does not exist"),
        (["--model", f"file:{huge}"], "huge.py", "over the 512 KiB a model file may have"),
        (["--model", f"hf:{empty_dir}"], "is a folder without config.json", "config.json"),
        (["--model", f"hf:{no_type}"], "has no model_type", "transformers cannot tell"),
        (["--model", f"hf:{MODELS / 'tiny-bert'}", "--seq-len", "128"], "--seq-len 128 is past",
         "maximum of 64 positions"),
        (["--model", "vit_tiny_patch16_224", "--seq-len", "16"], "seq len applies to text models", "images"),
        (["--model", "torchvision:resnet18", "--task", "classification"], "task applies to hf: models only", ""),
        (["--model", "fancy:thing"], "unknown source 'fancy'", "hf:"),
        (["--model", f"file:{MODELS / 'tiny-bert' / 'config.json'}"], "a model file is a Python file", ".py"),
    ]
    for args, first, second in cases:
        out = run_cli(*INFER, *args)
        assert out.code == 2, (args, out.stderr)
        line = _one_sentence(out.stderr)
        assert first in line and second in line, (args, line)
        assert out.stdout == ""


# ------------------------------------------------------------- reported by the agent (exit 1, run stored)
BROKEN_FILES = {
    "syntax.py": ("def build(batch_size):\n    return {'model': \n", "failed to import: line 2 SyntaxError"),
    "imports.py": ("import torch\n\nraise RuntimeError('no GPU driver on this box')\n",
                   "failed to import: line 3 RuntimeError: no GPU driver on this box"),
    "nofunc.py": ("import torch\n\ndef make(batch_size):\n    pass\n", "has no function build(batch_size, "
                  "**model_args) (it defines make)"),
    "raises.py": ("def build(batch_size):\n    raise ValueError('batch %d is too big' % batch_size)\n",
                  "build(batch_size=2) in raises.py raised line 2 ValueError: batch 2 is too big"),
    "returns.py": ("def build(batch_size):\n    return [1, 2]\n", "build() in returns.py returned list; the contract "
                   "is a dict with 'model'"),
    "notensor.py": ("import torch\n\ndef build(batch_size):\n    return {'model': torch.nn.Linear(2, 2), "
                    "'inputs': ([1.0, 2.0],)}\n", "returned inputs that are not tensors: 0"),
    "untraceable.py": ("import torch\n\nclass Silent(torch.nn.Module):\n    def forward(self, x):\n"
                       "        return None\n\ndef build(batch_size):\n"
                       "    return {'model': Silent(), 'inputs': (torch.ones(batch_size, 2),)}\n",
                       "compiling the model failed: the model returned NoneType, which holds no tensor"),
}


@pytest.mark.slow
def test_a_broken_model_file_is_named_with_its_line_and_the_run_is_stored(run_cli, tmp_path, app_paths):
    from app.services.store import RunStore

    for name, (text, sentence) in BROKEN_FILES.items():
        path = tmp_path / name
        path.write_text(text)
        out = run_cli(*INFER, "--model", f"file:{path}", "--json")
        assert out.code == 1, (name, out.stderr)
        line = _one_sentence(out.stderr)
        assert sentence in line, (name, line)
        [result] = out.json()
        assert result["status"] == "failed" and result["env"]["torch"], name  # what was learnt is kept
        with RunStore(app_paths.runs_db) as store:
            assert store.load(result["run_id"]).status == "failed"


@pytest.mark.slow
def test_hub_models_the_host_cannot_build(run_cli, cli_env):
    # A hub id whose config must come from the hub, on a host without internet (HF_HUB_OFFLINE: no
    # connection is ever attempted), and a task the architecture has no class for.
    offline = dict(cli_env, HF_HUB_OFFLINE="1")
    out = run_cli(*INFER, "--model", "hf:some-org/some-model", env=offline)
    assert out.code == 1
    line = _one_sentence(out.stderr)
    assert "could not fetch some-org/some-model's config.json" in line and "give hf:./DIR" in line

    out = run_cli(*INFER, "--model", f"hf:{MODELS / 'tiny-gpt2'}", "--task", "masked-lm")
    assert out.code == 1
    line = _one_sentence(out.stderr)
    assert "(gpt2) has no masked-lm class in transformers 5.24.0: its tasks are base, classification, causal-lm" \
        in line


@pytest.mark.slow
def test_a_sequence_length_for_a_model_without_one_is_one_sentence(run_cli, app_paths):
    """--seq-len to a file whose function takes no seq_len, and to an image transformer: said by the host, which
    alone can tell (it reads the function's signature, and builds the model to learn what it takes)."""
    from app.services.store import RunStore

    cases = [
        (["--model", f"file:{MODELS / 'two_tower.py'}", "--seq-len", "16"],
         "--seq-len was given but build() in two_tower.py takes no seq_len parameter: add one, or leave out "
         "--seq-len"),
        (["--model", f"hf:{MODELS / 'tiny-vit'}", "--task", "classification", "--seq-len", "16"],
         f"{MODELS / 'tiny-vit'} takes images (pixel_values): it has no sequence length, leave out --seq-len"),
    ]
    for args, sentence in cases:
        out = run_cli(*INFER, *args, "--json")
        assert out.code == 1, (args, out.stderr)
        line = _one_sentence(out.stderr)
        assert line == f"neuronbench: error: run failed on local: {sentence}", line
        [result] = out.json()
        assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"
        with RunStore(app_paths.runs_db) as store:
            assert store.load(result["run_id"]).status == "failed"
