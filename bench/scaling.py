"""Multi-node scaling, measured: the same tiny training on 1 node and on 2 nodes, side by side in one run.

The "nodes" are two agents on this computer, each with an agent home of its own
(as two machines would have), joined by torchrun's static rendezvous over
loopback, gloo on the CPU: the full product path of ``run --nodes`` (ClusterRun:
prepare, master address, merged stream and Result).  Rounds alternate 1-node and
2-node runs so that drift of the machine hits both.  It prints each round's
throughputs and the weak-scaling efficiency (throughput_2 / (2 x throughput_1)),
then what ``compare`` computes from those runs (with its 95% intervals).

On a 2-vCPU machine two nodes share the same two CPUs, so the efficiency is poor
by construction: the point is that the number is computed and shown honestly.

    python bench/scaling.py [--rounds 3] [--steps 60] [--nproc 1]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.core.compare import compare_runs  # noqa: E402
from app.core.pricebook import PriceBook  # noqa: E402
from app.core.runrecord import StoredRun  # noqa: E402
from app.paths import AppPaths  # noqa: E402
from app.services.cluster_run import ClusterRun, NodeTarget  # noqa: E402
from app.services.session import RunSession  # noqa: E402
from app.services.transport import LocalTransport  # noqa: E402
from remote_agent.protocol import RunSpec  # noqa: E402

TINY = {"img_size": 32, "patch_size": 8, "depth": 2, "embed_dim": 64, "num_heads": 2}


def stored(result: dict) -> StoredRun:
    return StoredRun(run_id=result["run_id"], host=result["host"], status=result["status"], spec=result["spec"],
                     created_at=0.0, env=result.get("env"), result=result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--nproc", type=int, default=1, help="processes per node")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        node_a, node_b = AppPaths.resolve(Path(tmp) / "a"), AppPaths.resolve(Path(tmp) / "b")
        base = dict(workload="train", model="vit_tiny_patch16_224", model_args=TINY, batch_sizes=(8,),
                    steps=args.steps, warmup=5, backend="cpu", workers=0, nproc=args.nproc)
        results = []
        print(f"{'round':>5} {'1 node samples/s':>17} {'2 nodes samples/s':>18} {'efficiency':>11}")
        for round_ in range(1, args.rounds + 1):
            one = RunSession(LocalTransport(node_a, host="node-a"), RunSpec(**base)).run()
            two = ClusterRun([NodeTarget(LocalTransport(node_a, host="node-a"), "127.0.0.1"),
                              NodeTarget(LocalTransport(node_b, host="node-b"), "127.0.0.1")],
                             RunSpec(**base, nnodes=2)).run()
            for result in (one, two):
                assert result["status"] == "ok", result.get("error")
            t1 = one["train"]["throughput_samples_per_s"]
            t2 = two["train"]["throughput_samples_per_s"]
            results += [one, two]
            print(f"{round_:>5} {t1:>17.1f} {t2:>18.1f} {t2 / (2 * t1):>10.0%}")
        ones = [r["train"]["throughput_samples_per_s"] for r in results if r["train"].get("nodes", 1) == 1]
        twos = [r["train"]["throughput_samples_per_s"] for r in results if r["train"].get("nodes", 1) == 2]
        print(f"median over rounds: 1 node {statistics.median(ones):.1f}, 2 nodes {statistics.median(twos):.1f} "
              f"samples/s: efficiency {statistics.median(twos) / (2 * statistics.median(ones)):.0%}")
        doc = compare_runs([stored(r) for r in results], PriceBook(snapshot=[], specs={}))
        for row in doc["scaling"]:
            ci = row["efficiency_ci95"]
            print(f"compare: {row['nodes']} node(s), world {row['world_size']}: {row['throughput']:.1f} samples/s "
                  f"(95% {row['throughput_ci95'][0]:.1f}–{row['throughput_ci95'][1]:.1f}), speed-up "
                  f"{row['speedup']:.2f}×, efficiency {row['efficiency']:.0%}"
                  + (f" (95% {ci[0]:.0%}–{ci[1]:.0%}, from {row['interval_from']})" if ci else ""))


if __name__ == "__main__":
    main()
