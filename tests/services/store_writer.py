"""A process that records events into a run store, as ``neuronbench run`` does, for crash/concurrency tests.

    python -m tests.services.store_writer DB RUN_ID COUNT [--forever]

Prints ``stored SEQ`` after each event is committed (the parent counts what was
acknowledged, then may SIGKILL us), and ``done`` at the end.
"""
from __future__ import annotations

import argparse
import sys

from app.services.recorder import RunRecorder
from app.services.store import RunStore
from tests.services.streams import T0, sample


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("run_id")
    parser.add_argument("count", type=int)
    parser.add_argument("--forever", action="store_true", help="keep writing after COUNT (until killed)")
    args = parser.parse_args()
    store = RunStore(args.db)
    recorder = RunRecorder.start(store, None, "host-" + args.run_id[-3:], {"workload": "train"}, args.run_id)
    seq = 0
    while args.forever or seq < args.count:
        seq += 1
        recorder(sample(seq, T0 + seq * 0.25, completed=seq))
        print(f"stored {seq}", flush=True)
    recorder.finish({"status": "ok", "workload": "train"})
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
