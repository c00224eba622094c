"""Run-store write cost: events stored per second, against appending the same events to a JSON Lines file.

The store commits every event on its own (so a crash loses none already received);
this measures what that costs next to ``--events PATH`` (one JSON line written and
flushed per event), side by side in alternating rounds, single-threaded and with
four threads recording four hosts at once.  A run emits a few to a few hundred
events a second (steps, 1 Hz samples, 2 Hz latency windows), so the figure to
read is the headroom: stored events per second divided by that rate.

    python bench/store_events.py [--events 3000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from app.services.store import RunStore  # noqa: E402
from remote_agent.protocol import make_event  # noqa: E402
from tests.services.streams import sample  # noqa: E402


def stream(n: int) -> list[dict]:
    """Steps with a telemetry sample after every fourth: a training run's mix."""
    events = []
    for i in range(n):
        seq = i + 1
        if i % 4 == 3:
            events.append(sample(seq, 1_795_000_000.0 + i * 0.25))
        else:
            events.append(make_event("step", seq, 1_795_000_000.0 + i * 0.25, i=i, dt_s=0.25, samples=32,
                                     compiled=False, loss=2.3))
    return events


def store_rate(folder: Path, events: list[dict], threads: int) -> float:
    store = RunStore(folder / "runs.sqlite3")
    ids = [f"bench-{time.monotonic_ns()}-{k}" for k in range(threads)]
    for run_id in ids:
        store.begin_run(run_id, "bench", {"workload": "train"})

    def record(run_id: str) -> None:
        for event in events:
            store.append_event(run_id, event)

    workers = [threading.Thread(target=record, args=(run_id,)) for run_id in ids]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    store.close()
    return threads * len(events) / elapsed


def jsonl_rate(folder: Path, events: list[dict]) -> float:
    start = time.perf_counter()
    with open(folder / f"events-{time.monotonic_ns()}.jsonl", "w", encoding="utf-8") as handle:
        for event in events:
            handle.write(json.dumps(event, separators=(",", ":")) + "\n")
            handle.flush()
    return len(events) / (time.perf_counter() - start)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    events = stream(args.events)
    results: dict[str, list[float]] = {"jsonl": [], "store": [], "store x4 threads": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for _ in range(args.rounds):
            results["jsonl"].append(jsonl_rate(folder, events))
            results["store"].append(store_rate(folder, events, 1))
            results["store x4 threads"].append(store_rate(folder, events, 4))
    medians = {name: statistics.median(values) for name, values in results.items()}
    for name, value in medians.items():
        print(f"{name:<18} {value:>10,.0f} events/s  ({1e6 / value:,.0f} µs per event)")
    print(f"store / jsonl      {medians['store'] / medians['jsonl']:.3f} (ratio of events/s, median of "
          f"{args.rounds} rounds of {args.events} events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
