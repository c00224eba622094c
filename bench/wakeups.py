"""How often the agent's relay processes wake up per training step, counted by the kernel.

A load-independent companion to ``overhead.py``: one tiny-ViT training through the
full product path (``LocalTransport``, ``agent run``, supervisor, worker), and the
kernel's count of voluntary context switches (``/proc/PID/status``: each one is a
sleep that ended, i.e. a wake-up) of the supervisor and of the follower (``agent run``,
the supervisor's parent), read at the first measured step and at the ``result`` event.
A poller wakes at its own period whatever the workload does; a reader woken on write
wakes about once per event.  Printed: wake-ups per step and per second, each process.

    python bench/wakeups.py [--backend xla] [--steps 150]
"""
from __future__ import annotations

import argparse
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

TINY = {"img_size": 32, "patch_size": 8, "depth": 2, "embed_dim": 64, "num_heads": 2}


def switches(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("voluntary_ctxt_switches:"):
                return int(line.split()[1])
    raise RuntimeError(f"no context switch count for pid {pid}")


def parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat") as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="xla")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()
    spec = RunSpec(workload="train", model="vit_tiny_patch16_224", model_args=TINY, batch_sizes=(8,),
                   steps=args.steps, warmup=args.warmup, backend=args.backend, workers=0)
    marks = {}

    def on_event(event):
        if event["type"] == "hello":
            marks["pids"] = {"supervisor": event["pid"], "follower": parent(event["pid"])}
        elif event["type"] == "step" and event["i"] in (args.warmup + 1, args.steps):
            marks[event["i"]] = (time.monotonic(), {name: switches(pid) for name, pid in marks["pids"].items()})

    with tempfile.TemporaryDirectory() as tmp:
        result = RunSession(LocalTransport(AppPaths.resolve(tmp)), spec, on_event=on_event).run()
    assert result["status"] == "ok", result["error"]
    (t0, first), (t1, last) = marks[args.warmup + 1], marks[args.steps]
    steps = args.steps - args.warmup - 1
    print(f"tiny ViT, {args.backend}, {steps} steps in {t1 - t0:.2f} s "
          f"({(t1 - t0) / steps * 1000:.1f} ms a step, telemetry at its default period)")
    for name in ("supervisor", "follower"):
        count = last[name] - first[name]
        print(f"  {name:<10} {count:6d} wake-ups: {count / steps:5.2f} a step, {count / (t1 - t0):6.1f} a second")


if __name__ == "__main__":
    main()
