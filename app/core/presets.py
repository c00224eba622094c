"""Ready-made specs: the seed articles' experiments, and a quick first run for this computer."""
from __future__ import annotations

from dataclasses import dataclass

from remote_agent.protocol import RunSpec

# What an inference run sweeps when nobody says (the CLI's --batch-sizes default, the GUI's too).
INFER_DEFAULT_BATCH_SIZES = (1, 4, 16)
TINY_VIT_ARGS = {"img_size": 32, "patch_size": 8, "depth": 2, "embed_dim": 64, "num_heads": 2}
# generate: the tiny random Llama whose config ships in resources/models (205k parameters: seconds on a laptop).
TINY_LLAMA = "hf:neuronbench/tiny-random-llama"
# The shapes AWS's Neuron decoder tables and vLLM's benchmarks publish: (prompt tokens, new tokens).
LLM_SHAPES = ((128, 128), (1024, 128), (128, 1024))
LLM_BATCH_SIZES = (1, 4, 16)


@dataclass(frozen=True)
class Preset:
    name: str
    title: str
    spec: RunSpec


def _llm_presets() -> tuple[Preset, ...]:
    """Llama-3.1-8B and Mistral-7B shapes (shipped configs, random weights, bf16) at the published shapes."""
    models = (("llama-3.1-8b", "Llama-3.1-8B", "hf:meta-llama/Llama-3.1-8B"),
              ("mistral-7b", "Mistral-7B", "hf:mistralai/Mistral-7B-v0.1"))
    return tuple(
        Preset(f"{key}-generate-{s_in}-{s_out}",
               f"{title} shape generating, {s_in} in / {s_out} out, batch 1, 4, 16, bf16 (random weights)",
               RunSpec(workload="generate", model=model, task="causal-lm", batch_sizes=LLM_BATCH_SIZES,
                       input_lens=(s_in,), output_lens=(s_out,), precision="bf16", warmup=2, min_iters=10,
                       duration=10.0))
        for key, title, model in models for s_in, s_out in LLM_SHAPES)


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("quickstart", "A first look: ViT-Tiny training for 30 steps on this computer",
           RunSpec(workload="train", model="vit_tiny_patch16_224", batch_sizes=(8,), steps=30, warmup=5)),
    Preset("tiny-train", "Tiny ViT training (the test model): seconds on any machine",
           RunSpec(workload="train", model="vit_tiny_patch16_224", model_args=TINY_VIT_ARGS, batch_sizes=(8,),
                   steps=20, warmup=3, workers=0)),
    Preset("seed-train-trn1", "Seed: ViT-Base training, batch 16, bf16, 2 workers (trn1.2xlarge, 4 loader workers)",
           RunSpec(workload="train", model="vit_base_patch16_224", batch_sizes=(16,), steps=500, warmup=10,
                   precision="bf16", nproc=2, workers=4, backend="neuron")),
    Preset("seed-train-inf2", "Seed: ViT-Base training on inf2.xlarge (2 loader workers)",
           RunSpec(workload="train", model="vit_base_patch16_224", batch_sizes=(16,), steps=500, warmup=10,
                   precision="bf16", nproc=2, workers=2, backend="neuron")),
    Preset("seed-infer-resnet50", "Seed: torchvision's ResNet-50 traced, batch 1 and 10 (Inf2 vs Inf1 article)",
           RunSpec(workload="infer", model="torchvision:resnet50", batch_sizes=(1, 10), warmup=1, min_iters=100,
                   duration=10.0)),
    # Seed 003's table: each model compiled for batch 1 and 10, called once to warm up, then 10 timed calls.
    # Ten calls give a rough p99 (the Result says so); add --min-iters 100 for a firm one.
    Preset("seed-infer-bert-large", "Seed: BERT-large uncased, sequence classification, seq 128, batch 1 and 10",
           RunSpec(workload="infer", model="hf:bert-large-uncased", task="classification", seq_lens=(128,),
                   batch_sizes=(1, 10), warmup=1, min_iters=10, duration=0.1)),
    Preset("seed-infer-electra-large", "Seed: ELECTRA-large discriminator, seq 256, batch 1 and 10",
           RunSpec(workload="infer", model="hf:google/electra-large-discriminator", task="base", seq_lens=(256,),
                   batch_sizes=(1, 10), warmup=1, min_iters=10, duration=0.1)),
    Preset("gpt2-train", "GPT-2 small causal-LM training, seq 512, batch 8, bf16",
           RunSpec(workload="train", model="hf:gpt2", task="causal-lm", seq_lens=(512,), batch_sizes=(8,),
                   steps=100, warmup=10, precision="bf16")),
    Preset("gpt2-infer", "GPT-2 small traced forward pass (causal LM), seq 512, batch 1 and 4",
           RunSpec(workload="infer", model="hf:gpt2", task="causal-lm", seq_lens=(512,), batch_sizes=(1, 4),
                   warmup=10, min_iters=100, duration=10.0)),
    Preset("tiny-generate", "Generate with a tiny random Llama: TTFT and TPOT in seconds on this computer",
           RunSpec(workload="generate", model=TINY_LLAMA, task="causal-lm", batch_sizes=(1, 4), input_lens=(32,),
                   output_lens=(16,), warmup=2, min_iters=20, duration=2.0)),
    Preset("tiny-serve", "Serve a tiny random Llama with transformers serve: TTFT, TPOT and tok/s per load level, "
                         "here at once",
           RunSpec(workload="serve", model=TINY_LLAMA, input_lens=(16,), output_lens=(16,), concurrency=(1, 2, 4),
                   min_iters=20, duration=2.0)),
    *_llm_presets(),
    Preset("vit-infer-sweep", "ViT-Base traced inference, batch 1, 4, 16",
           RunSpec(workload="infer", model="vit_base_patch16_224", batch_sizes=(1, 4, 16), warmup=10,
                   min_iters=100, duration=10.0)),
)}
