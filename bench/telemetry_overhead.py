"""Telemetry overhead: steady step times with sampling on against off, side by side in one run.

One training process (the bare seed loop, bench/seed_loop.py) runs from start
to end; this script is its parent, as the supervisor is the workload's, and
samples it exactly as a run does (remote_agent.monitor's sources, the
workload's process tree below this pid, each ``sample`` event appended to an
event log on disk) in alternating blocks of a few seconds: off, 1 s period,
off, 0.2 s period, off, ...  Every step is classed by the block it ran in
(steps across a block boundary are dropped), so drift of a shared machine
(other jobs coming and going) hits every side alike.  Comparing whole runs
instead is hopeless on a busy machine: medians of identical runs here spread
over 30x.

Prints the ratio on/off of median step times (target <= 1.01 at the default
1 s period) and of mean step times (the mean also carries the rare step that
coincides with a sample), and an off-against-off ratio (odd off blocks
against even ones) as the noise floor.  It also measures what a sample costs
directly, in CPU time: reading /proc and the process tree, mapping a
neuron-monitor report, encoding the event; the slowdown is bounded by about
that cost / period, whatever else the machine is doing.

    python bench/telemetry_overhead.py [--steps 3000] [--block 4] [--batch-size 8]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from remote_agent.eventlog import EventLog  # noqa: E402
from remote_agent.monitor.neuron import map_report  # noqa: E402
from remote_agent.monitor.procfs import ProcfsSource  # noqa: E402
from remote_agent.monitor.sampler import Sampler, host_sources, merge  # noqa: E402
from remote_agent.protocol import encode, make_event  # noqa: E402

TARGET = 1.01
TINY = {"img_size": 32, "patch_size": 8, "depth": 2, "embed_dim": 64, "num_heads": 2}
BLOCKS = (("off", 0.0), ("1 s", 1.0), ("off", 0.0), ("0.2 s", 0.2))
NEURON_REPORTS = REPO / "tests" / "data" / "neuron" / "neuron-monitor-trn1-2xlarge.jsonl"


def cpu_ms(work, repeats: int) -> float:
    """CPU milliseconds per call of ``work`` (process time: what it takes from the workload's CPUs)."""
    start = time.process_time()
    for _ in range(repeats):
        work()
    return (time.process_time() - start) / repeats * 1000.0


def sampling_cost() -> None:
    procfs = ProcfsSource(root_pid=os.getppid())  # a real process tree: this script's parent's
    procfs.start()
    reports = [json.loads(line) for line in NEURON_REPORTS.read_text().splitlines()[15:]]
    proc_ms = cpu_ms(lambda: merge([("procfs", procfs.read())], 1.0), 300)
    neuron_ms = cpu_ms(lambda: [map_report(r) for r in reports], 20) / len(reports)
    payload = merge([("neuron-monitor", map_report(reports[0])), ("procfs", procfs.read())], 1.0)
    encode_ms = cpu_ms(lambda: encode(make_event("sample", 1, **payload)), 2000)
    total = proc_ms + neuron_ms + encode_ms
    processes = sum(1 for name in os.listdir("/proc") if name.isdigit())
    print(f"CPU time per sample: /proc host + process tree {proc_ms:.3f} ms ({processes} processes on this host), "
          f"neuron-monitor report mapping {neuron_ms:.3f} ms (trn1.2xlarge, 2 runtimes), event encoding "
          f"{encode_ms:.3f} ms; {total:.2f} ms in all = {total / 10:.2f}% of one CPU at the 1 s period, "
          f"{total / 2:.2f}% at 0.2 s", flush=True)


def alternate(child: subprocess.Popen, block_s: float, log: EventLog) -> list[tuple[float, float, str]]:
    """Sample in blocks while the child trains; the (start, end, label) of every block."""
    blocks = []
    done = threading.Event()
    threading.Thread(target=lambda: (child.wait(), done.set()), daemon=True).start()
    index = 0
    while not done.is_set():
        label, period = BLOCKS[index % len(BLOCKS)]
        start = time.time()
        sampler = None
        if period:
            sampler = Sampler(host_sources(period, root_pid=os.getpid()), period,
                              lambda t, sample: log.emit("sample", t=t, **sample))
            sampler.start()
        done.wait(block_s)
        if sampler is not None:
            sampler.stop()
        blocks.append((start, time.time(), label))
        index += 1
    return blocks


def classify(steps: list[list[float]], blocks: list[tuple[float, float, str]]) -> dict[str, list[list[float]]]:
    """Step times per block label, block by block; a step that straddles two blocks counts for neither."""
    found: dict[str, list[list[float]]] = {}
    for start, end, label in blocks:
        inside = [dt for t_end, dt in steps if start <= t_end - dt and t_end <= end]
        found.setdefault(label, []).append(inside)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000, help="training steps in all (tiny ViT)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--block", type=float, default=4.0, help="seconds per block")
    parser.add_argument("--warmup", type=int, default=50, help="first steps left out")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start", flush=True)
    sampling_cost()
    child = subprocess.Popen([sys.executable, str(REPO / "bench" / "seed_loop.py"), "--model", "vit_tiny_patch16_224",
                              "--model-args", json.dumps(TINY), "--batch-size", str(args.batch_size),
                              "--steps", str(args.steps), "--backend", "cpu", "--stamps"],
                             stdout=subprocess.PIPE, text=True)
    with tempfile.TemporaryDirectory() as tmp:
        log = EventLog.open(os.path.join(tmp, "events.jsonl"))
        output: list[str] = []
        reader = threading.Thread(target=lambda: output.append(child.stdout.read()), daemon=True)
        reader.start()
        blocks = alternate(child, args.block, log)
        reader.join()
        samples = sum(1 for _ in open(os.path.join(tmp, "events.jsonl")))
    steps = json.loads(output[0].strip().splitlines()[-1])[args.warmup:]
    found = classify(steps, blocks)
    off_blocks = found["off"]
    off = [dt for block in off_blocks for dt in block]
    print(f"\ntiny ViT (test model), cpu, batch {args.batch_size}: {len(steps)} steps in {len(blocks)} blocks of "
          f"{args.block:g} s, {samples} samples taken; load average now {os.getloadavg()[0]:.1f}")
    print(f"  {'telemetry':<10} {'steps':>6} {'median ms':>10} {'mean ms':>9} {'median ratio':>13} {'mean ratio':>11}")
    print(f"  {'off':<10} {len(off):>6} {statistics.median(off) * 1000:>10.3f} {statistics.mean(off) * 1000:>9.3f}")
    for label in ("1 s", "0.2 s"):
        on = [dt for block in found.get(label, []) for dt in block]
        if not on:
            continue
        target = f"  (target <= {TARGET})" if label == "1 s" else ""
        print(f"  {label:<10} {len(on):>6} {statistics.median(on) * 1000:>10.3f} {statistics.mean(on) * 1000:>9.3f} "
              f"{statistics.median(on) / statistics.median(off):>13.4f} "
              f"{statistics.mean(on) / statistics.mean(off):>11.4f}{target}")
    odd = [dt for block in off_blocks[0::2] for dt in block]
    even = [dt for block in off_blocks[1::2] for dt in block]
    print(f"  noise floor, off blocks 1,3,.. against 2,4,..: median ratio "
          f"{statistics.median(odd) / statistics.median(even):.4f}, mean ratio "
          f"{statistics.mean(odd) / statistics.mean(even):.4f}")


if __name__ == "__main__":
    main()
