"""FLOPs per sample (remote_agent/workloads/flops.py) against hand counts and PyTorch's own counter run for real."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from app.services.model_files import model_file_for
from remote_agent.protocol import RunSpec
from remote_agent.workloads.flops import count_flops
from remote_agent.workloads.sources import load_model
from tests.conftest import DATA
from tests.helpers import TINY_ARGS, TINY_MODEL

LINEAR = '''
import torch


def build(batch_size, bias=True):
    torch.manual_seed(0)
    return {"model": torch.nn.Linear(64, 32, bias=bias), "inputs": (torch.randn(batch_size, 64),),
            "loss": lambda out, inputs: out.pow(2).mean()}
'''


def file_model(tmp_path: Path, text: str, batch: int, **args) -> object:
    path = tmp_path / "model.py"
    path.write_text(text)
    model = f"file:{path}"
    spec = RunSpec(model=model, model_file=model_file_for(model), model_args=args, batch_sizes=(batch,))
    return load_model(spec, batch, None, str(tmp_path))


def tiny_vit(batch: int) -> object:
    args = {k: int(v) for k, v in (a.split("=") for a in TINY_ARGS)}
    return load_model(RunSpec(model=TINY_MODEL, model_args=args, batch_sizes=(batch,)), batch, None, "/tmp")


@pytest.mark.parametrize("bias", [True, False])
def test_a_linear_layer_counts_as_by_hand(tmp_path, bias):
    mut = file_model(tmp_path, LINEAR, 8, bias=bias)
    inference = count_flops(mut, 8, 0, False, "fp32")
    # y = x W^T (+ b): 64 x 32 multiply-adds a sample, 2 FLOPs each; the bias add is not matmul work.
    assert inference["flops_per_sample"] == 2 * 64 * 32
    assert inference["counted_on"] == "meta device, batch 8" and inference["matmul_dtype"] == "fp32"
    training = count_flops(mut, 8, 0, True, "fp32")
    # Backward: the weight's gradient (dL/dy^T x) costs the forward's again; the input needs no gradient.
    assert training["flops_per_sample"] == 2 * (2 * 64 * 32)
    assert mut.module.weight.grad is None  # the run's own weights were not touched


def test_a_vit_counts_what_pytorchs_counter_counts_running_it_for_real():
    mut = tiny_vit(4)
    for training in (False, True):
        mut.module.train(training)
        ours = count_flops(mut, 4, 0, training, "fp32")
        batch = mut.make_batch(4, 0, True)
        # Reference: the real module, real tensors on the CPU, attention by its math kernel (whose matmuls
        # the counter sees; the fused CPU kernel it does not count).
        with FlopCounterMode(display=False) as counter, sdpa_kernel(SDPBackend.MATH):
            if training:
                mut.loss(mut.training_forward(mut.module, batch), batch).backward()
            else:
                with torch.no_grad():
                    mut.module(*batch.tensors())
        mut.module.zero_grad(set_to_none=True)
        assert ours["flops_per_sample"] == counter.get_total_flops() / 4
        assert ours["counted_on"] == "meta device, batch 4"


def test_vit_base_is_its_published_size_and_training_is_three_forwards():
    args = RunSpec(model="vit_base_patch16_224", batch_sizes=(16,))
    mut = load_model(args, 16, None, "/tmp")
    forward = count_flops(mut, 16, 0, False, "bf16")["flops_per_sample"]
    mut.module.train()
    training = count_flops(mut, 16, 0, True, "bf16")["flops_per_sample"]
    assert forward / 2e9 == pytest.approx(17.56, abs=0.02)  # timm's 17.6 GMACs for ViT-B/16 at 224 px
    assert training / forward == pytest.approx(3.0, abs=0.01)  # backward costs two forwards (less the input conv)


def test_a_text_model_is_counted_at_its_sequence_length():
    model = f"hf:{DATA / 'models' / 'tiny-bert'}"
    counts = {}
    for seq_len in (16, 64):
        spec = RunSpec(model=model, model_file=model_file_for(model), seq_lens=(seq_len,), batch_sizes=(2,))
        mut = load_model(spec, 2, seq_len, "/tmp")
        mut.module.eval()
        counts[seq_len] = count_flops(mut, 2, 0, False, "fp32")
        # BERT looks at its attention mask's values (all ones?), which meta tensors have none of: the CPU counts.
        assert counts[seq_len]["counted_on"] == "host CPU, batch 1"
    # The dense layers grow with the tokens, attention faster: four times the tokens, more than four times the work.
    assert counts[64]["flops_per_sample"] > 4 * counts[16]["flops_per_sample"]


def test_a_forward_that_needs_real_values_is_counted_on_the_cpu(tmp_path):
    mut = file_model(tmp_path, (DATA / "models" / "branchy.py").read_text(), 4)  # branches on x.mean() > 0
    block = count_flops(mut, 4, 0, False, "fp32")
    # Its inputs are made for batch 4 only (they do not tile down to 1): counted at 4, per sample.
    assert block["counted_on"] == "host CPU, batch 4" and block["flops_per_sample"] == 2 * 8 * 8


def test_a_model_without_matmul_work_has_no_count_and_says_why(tmp_path):
    text = ('import torch\n\ndef build(batch_size):\n'
            '    return {"model": torch.nn.ReLU(), "inputs": (torch.randn(batch_size, 4),)}\n')
    block = count_flops(file_model(tmp_path, text, 2), 2, 0, False, "fp32")
    assert block["flops_per_sample"] is None
    assert block["missing"].startswith("the FLOP counter could not run the model (meta at batch 2: the counter saw "
                                       "no matmul or convolution; cpu at batch 1: ")


def test_a_batch_of_one_that_needs_real_values_is_counted_on_the_cpu():
    """The seed's batch-1 inference of a BERT: meta cannot run it, so the host's CPU counts that one sample."""
    model = f"hf:{DATA / 'models' / 'tiny-bert'}"
    spec = RunSpec(model=model, model_file=model_file_for(model), seq_lens=(16,), batch_sizes=(1,))
    mut = load_model(spec, 1, 16, "/tmp")
    mut.module.eval()
    block = count_flops(mut, 1, 0, False, "fp32")
    assert block["counted_on"] == "host CPU, batch 1" and block["flops_per_sample"] > 0
