"""Steps needed for a ±2 % figure (--target-ci 2) against the seed's fixed 500 steps (10 skipped), side by side.

For each configuration, through the full product path (the real zipapp under ``LocalTransport``):

1. **fixed**: the seed's recipe, 500 steps with the first 10 skipped, no target.  The stopping
   rule (``remote_agent.stopping``, exactly what the agent runs) is replayed on its step events:
   the step a ``--target-ci 2`` run would have stopped at, on the very data the 500-step figure
   comes from, so both figures come from one run: the steps ratio (target <= 0.5) and the
   median at the stop against the median of all 500;
2. with ``--live``, **target**: the same spec run again with ``--target-ci 2`` (500 the cap): where
   the agent itself stopped, its median against the fixed run's, and the wall-time ratio.

    python bench/target_ci.py [--only TEXT] [--target 2] [--steps 500] [--live]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.paths import AppPaths  # noqa: E402
from app.services.session import RunSession  # noqa: E402
from app.services.transport import LocalTransport  # noqa: E402
from remote_agent.protocol import RunSpec  # noqa: E402
from remote_agent.stopping import TrainingStop  # noqa: E402

TINY = {"img_size": 32, "patch_size": 8, "depth": 2, "embed_dim": 64, "num_heads": 2}
CONFIGS = [  # name, model, model args, batch, backend
    ("tiny ViT (test model), cpu", "vit_tiny_patch16_224", TINY, 8, "cpu"),
    ("tiny ViT (test model), xla", "vit_tiny_patch16_224", TINY, 8, "xla"),
    ("ViT-Small 224, cpu", "vit_small_patch16_224", {}, 8, "cpu"),
    ("ViT-Small 224, xla", "vit_small_patch16_224", {}, 8, "xla"),
]
WARMUP = 10


def run(paths: AppPaths, model: str, args: dict, batch: int, backend: str, steps: int,
        target: float | None) -> tuple[dict, list[dict], float]:
    spec = RunSpec(workload="train", model=model, model_args=args, batch_sizes=(batch,), steps=steps,
                   warmup=WARMUP, backend=backend, workers=0, target_ci=target)
    events: list[dict] = []
    started = time.monotonic()
    result = RunSession(LocalTransport(paths), spec, on_event=events.append).run()
    assert result["status"] == "ok", result["error"]
    return result["train"], [e for e in events if e["type"] == "step"], time.monotonic() - started


def replay(steps: list[dict], target: float) -> int | None:
    rule = TrainingStop(target, WARMUP)
    return next((s["i"] for s in steps if rule.add(s["i"], s["dt_s"], s["compiled"])), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", metavar="TEXT", help="only the configurations whose name contains TEXT")
    parser.add_argument("--target", type=float, default=2.0)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--live", action="store_true", help="also run the target through the agent itself")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        paths = AppPaths.resolve(tmp)
        for name, model, model_args, batch, backend in CONFIGS:
            if args.only and args.only not in name:
                continue
            fixed, fixed_steps, fixed_wall = run(paths, model, model_args, batch, backend, args.steps, None)
            replayed = replay(fixed_steps, args.target)
            fixed_median = fixed["step_time_s"]["median"]
            print(f"{name}, batch {batch}: fixed {args.steps} steps (skip {WARMUP}) against --target-ci "
                  f"{args.target:g}", flush=True)
            print(f"  fixed : median {fixed_median:.5f} s, its interval ±{fixed['ci_pct']:.2f} %, "
                  f"wall {fixed_wall:.0f} s")
            if replayed:
                median = statistics.median(s["dt_s"] for s in fixed_steps if WARMUP < s["i"] <= replayed)
                ratio = replayed / args.steps
                print(f"  rule on the same steps: known after step {replayed}, ratio {ratio:.3f} (target <= 0.5) "
                      f"{'PASS' if ratio <= 0.5 else 'FAIL'}; median there {median:.5f} s "
                      f"({100 * (median / fixed_median - 1):+.2f} % vs all {args.steps})", flush=True)
            else:
                print(f"  rule on the same steps: ±{args.target:g} % not reached in {args.steps} steps "
                      f"(ratio > 1) FAIL", flush=True)
            if args.live:
                known, _, known_wall = run(paths, model, model_args, batch, backend, args.steps, args.target)
                known_median = known["step_time_s"]["median"]
                print(f"  target run: stopped by {known['stopped_by']} after {known['steps_total']} steps "
                      f"(ratio {known['steps_total'] / args.steps:.3f}), median {known_median:.5f} s "
                      f"({100 * (known_median / fixed_median - 1):+.2f} % vs fixed), interval "
                      f"±{known['ci_pct']:.2f} %, wall ratio {known_wall / fixed_wall:.3f}", flush=True)


if __name__ == "__main__":
    main()
