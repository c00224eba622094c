"""Telemetry overhead: median steady step time with sampling on against off, side by side in one run.

Both sides are the full product path (the real agent zipapp through
``LocalTransport``) training the same model with the same batch; only the
spec's ``telemetry_period`` differs (0 = off).  Rounds alternate and rotate
the order (off, 1 s, 0.2 s; then 1 s, 0.2 s, off; ...) so that drift of a
shared machine hits every side alike.  Prints, per period, the ratio of the
pooled median step times on / off (target: <= 1.01 at the default 1 s period)
and the median of the per-round ratios (each round's runs are neighbours in
time), with an off-against-off ratio (odd rounds against even ones) as the
noise floor of this machine.

Step times on a busy machine swing more than the effect, so it also measures
what sampling costs directly: CPU time per sample of the sampler's own work
(reading /proc and the workload's process tree, mapping a neuron-monitor
report, encoding the event), which bounds the slowdown at about
cost / period whatever else the machine is doing.

    python bench/telemetry_overhead.py [--rounds 6] [--quick]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from overhead import TINY, run_agent  # noqa: E402

from app.paths import AppPaths  # noqa: E402
from remote_agent.monitor.neuron import map_report  # noqa: E402
from remote_agent.monitor.procfs import ProcfsSource  # noqa: E402
from remote_agent.monitor.sampler import merge  # noqa: E402
from remote_agent.protocol import encode, make_event  # noqa: E402

TARGET = 1.01
CONFIGS = [
    # name, model, model args, batch, steps, warmup
    ("tiny ViT (test model), cpu", "vit_tiny_patch16_224", TINY, 8, 300, 20),
    ("ViT-Small 224, cpu", "vit_small_patch16_224", {}, 8, 30, 5),
]
SIDES = (("off", 0), ("1 s", 1.0), ("0.2 s", 0.2))
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
    steady = map_report(reports[0])
    proc_ms = cpu_ms(lambda: merge([("procfs", procfs.read())], 1.0), 300)
    neuron_ms = cpu_ms(lambda: [map_report(r) for r in reports], 20) / len(reports)
    payload = merge([("neuron-monitor", steady), ("procfs", procfs.read())], 1.0)
    encode_ms = cpu_ms(lambda: encode(make_event("sample", 1, **payload)), 2000)
    total = proc_ms + neuron_ms + encode_ms
    processes = sum(1 for name in os.listdir("/proc") if name.isdigit())
    print(f"sampling cost, CPU per sample: /proc host + process tree {proc_ms:.3f} ms ({processes} processes on "
          f"this host), neuron-monitor report mapping {neuron_ms:.3f} ms (trn1.2xlarge, 2 runtimes), event "
          f"encoding {encode_ms:.3f} ms; {total:.2f} ms in all = {total / 10:.2f}% of one CPU at the 1 s period, "
          f"{total / 2:.2f}% at 0.2 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--quick", action="store_true", help="tiny model only")
    args = parser.parse_args()
    configs = CONFIGS[:1] if args.quick else CONFIGS
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start")
    sampling_cost()
    with tempfile.TemporaryDirectory() as tmp:
        paths = AppPaths.resolve(tmp)
        for name, model, model_args, batch, steps, warmup in configs:
            runs: dict[str, list[list[float]]] = {label: [] for label, _ in SIDES}
            for round_index in range(args.rounds):
                shift = round_index % len(SIDES)
                for label, period in SIDES[shift:] + SIDES[:shift]:
                    runs[label].append(run_agent(paths, model, model_args, batch, steps, warmup, "cpu",
                                                 telemetry_period=period))
            medians = {label: [statistics.median(run) for run in runs[label]] for label in runs}
            off = statistics.median(t for run in runs["off"] for t in run)
            print(f"\n{name}: {args.rounds} rounds x {steps} steps; median steady step with telemetry off "
                  f"{off * 1000:.3f} ms")
            for label, _ in SIDES[1:]:
                on = statistics.median(t for run in runs[label] for t in run)
                paired = statistics.median(a / b for a, b in zip(medians[label], medians["off"], strict=True))
                print(f"  period {label:>5}: {on * 1000:8.3f} ms; on/off pooled {on / off:6.3f}, "
                      f"per round (median) {paired:6.3f}" + (f"  (target <= {TARGET})" if label == "1 s" else ""))
            odd = statistics.median(t for run in runs["off"][0::2] for t in run)
            even = statistics.median(t for run in runs["off"][1::2] for t in run)
            spread = [m / off for m in medians["off"]]
            print(f"  noise floor: off rounds 1,3,.. / 2,4,.. = {odd / even:6.3f}; single off rounds lie at "
                  f"{min(spread):.3f}-{max(spread):.3f} of the pooled off median; load average now "
                  f"{os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
