"""StoredRun builders for compare/report tests: Results shaped as remote_agent/summary.py writes them."""
from __future__ import annotations

import itertools
from typing import Any

from app.core.pricebook import PriceBook, parse_snapshot_csv
from app.core.runrecord import StoredRun
from tests.conftest import DATA

_ids = itertools.count(1)
VIT = {"model": "vit_base_patch16_224", "model_args": {}, "precision": "bf16"}


def book() -> PriceBook:
    entries, specs = parse_snapshot_csv((DATA / "pricing" / "aws-instances.csv").read_text())
    return PriceBook(snapshot=entries, specs=specs)


def env(instance_type: str | None, region: str | None = "us-east-1", **extra: Any) -> dict[str, Any]:
    return {"instance_type": instance_type, "region": region, "python": {"version": "3.10.12"}, "torch": "2.9.0",
            "torch_xla": "2.9.0", "torch_neuronx": "2.9.0.2.11", "neuronx_cc": "2.21.18209.0", "timm": "1.0.31",
            "cpu": {"model": "AMD EPYC", "count": 4}, "devices": [], **extra}


def train_run(host: str, instance_type: str | None, throughput: float | None, batch: int = 32,
              compile_s: float = 600.0, status: str = "ok", region: str = "us-east-1",
              flops_per_sample: float | None = None, **spec: Any) -> StoredRun:
    run_id = f"20261122-1200{next(_ids):02d}-aaaaaa"
    result = {"schema": "neuronbench.result/1", "run_id": run_id, "host": host, "workload": "train",
              "backend": "neuron", "status": status,
              "error": {"kind": "oom", "message": "out of device memory"} if status == "failed" else None,
              "spec": {"workload": "train", "batch_sizes": [batch], "warmup": 5, "steps": 100, "nproc": 2,
                       "backend": "neuron",
                       **VIT, **spec},
              "env": env(instance_type, region),
              "train": {"steps_total": 100, "steps_measured": 90, "global_batch": batch,
                        "compile": {"seconds": compile_s, "count": 2, "steps": [1, 2]},
                        "step_time_s": {"median": 0.3, "ci95": [0.29, 0.31]},
                        "throughput_samples_per_s": throughput,
                        **({"flops_per_sample": flops_per_sample} if flops_per_sample else {})}
              if status == "ok" else None,
              "infer": None, "cost": None, "warnings": []}
    return StoredRun(run_id=run_id, host=host, status=status, spec=result["spec"], created_at=1.0e9,
                     workload="train", model=VIT["model"], env=result["env"], result=result,
                     instance_type=instance_type)


def infer_run(host: str, instance_type: str | None, rows: list[tuple[int, float, float]],
              model: str = "bert-large", flops_per_sample: float | None = None, **spec: Any) -> StoredRun:
    """rows: (batch size, throughput/s, p99 ms)."""
    run_id = f"20261122-1300{next(_ids):02d}-bbbbbb"
    result = {"schema": "neuronbench.result/1", "run_id": run_id, "host": host, "workload": "infer",
              "backend": "neuron", "status": "ok", "error": None,
              "spec": {"workload": "infer", "model": model, "model_args": {}, "precision": "fp32", "backend": "neuron",
                       "batch_sizes": [r[0] for r in rows], "duration": 10, "min_iters": 100, **spec},
              "env": env(instance_type),
              "infer": [{"batch_size": b, "compile_s": 40.0, "iterations": 1000,
                         "latency_ms": {"p50": p99 * 0.8, "p90": p99 * 0.9, "p95": p99 * 0.95, "p99": p99,
                                        "mean": p99 * 0.8},
                         "throughput_per_s": t, "p99_reliable": True,
                         **({"flops_per_sample": flops_per_sample} if flops_per_sample else {})} for b, t, p99 in rows],
              "train": None, "cost": None, "warnings": []}
    return StoredRun(run_id=run_id, host=host, status="ok", spec=result["spec"], created_at=1.0e9,
                     workload="infer", model=model, env=result["env"], result=result, instance_type=instance_type)


def generate_run(host: str, instance_type: str | None, points: list[tuple[int, int, int, float, float, float]],
                 model: str = "hf:meta-llama/Llama-3.1-8B", backend: str = "neuron", **spec: Any) -> StoredRun:
    """points: (batch, prompt tokens, new tokens, output tok/s, TTFT p50 ms, TPOT p50 ms), 200 calls each."""
    run_id = f"20261122-1400{next(_ids):02d}-cccccc"

    def dist(p50: float) -> dict[str, Any]:
        return {"p50": p50, "p90": p50 * 1.1, "p99": p50 * 1.3, "mean": p50, "ci95": [p50 * 0.98, p50 * 1.02],
                "n": 200, "p99_flag": None}

    result = {"schema": "neuronbench.result/1", "run_id": run_id, "host": host, "workload": "generate",
              "backend": backend, "status": "ok", "error": None,
              "spec": {"workload": "generate", "model": model, "task": "causal-lm", "model_args": {},
                       "precision": "bf16", "backend": backend, "batch_sizes": sorted({p[0] for p in points}),
                       "input_lens": sorted({p[1] for p in points}), "output_lens": sorted({p[2] for p in points}),
                       "duration": 10, "min_iters": 10, **spec},
              "env": env(instance_type),
              "generate": [{"batch_size": b, "input_len": s_in, "output_len": s_out, "calls": 200, "load_s": 30.0,
                            "first_call_s": 120.0, "compile_s": 110.0, "ttft_ms": dist(ttft), "tpot_ms": dist(tpot),
                            "e2e_ms": dist(ttft + tpot * (s_out - 1)), "output_tok_s": out,
                            "total_tok_s": out * (s_in + s_out) / s_out, "prefill_tok_s": b * s_in / ttft * 1e3,
                            "decode_tok_s": b * 1e3 / tpot, "check": {"agrees": True, "finite": True,
                                                                       "max_rel_err": 0.01, "greedy_agreement": 0.9},
                            "prefill_flops_per_row": 2.0 * 8e9 * s_in, "decode_flops_per_token": 2.0 * 8e9,
                            "matmul_dtype": "bf16", "stack": "optimum-neuron", "error": None}
                           for b, s_in, s_out, out, ttft, tpot in points],
              "train": None, "infer": None, "cost": None, "warnings": []}
    return StoredRun(run_id=run_id, host=host, status="ok", spec=result["spec"], created_at=1.0e9,
                     workload="generate", model=model, env=result["env"], result=result,
                     instance_type=instance_type)
