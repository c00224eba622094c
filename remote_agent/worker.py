"""Entry point of a workload process (``agent _worker RUN_DIR LAUNCH [--batch-size N [--seq-len L]]``).

Started by the supervisor, directly or through torchrun.  It reports through its
own side file (``WorkerEvents``), never through stdout: compilers and runtimes
print there, and the supervisor turns that text into ``log`` events instead.
"""
from __future__ import annotations

import json
import os
import sys
from typing import List, Optional, Tuple

from remote_agent.eventlog import WorkerEvents
from remote_agent.orphan import die_with_parent
from remote_agent.protocol import RunSpec
from remote_agent.rundir import RunDir


def main(run_path: str, launch: int, batch_size: Optional[int], seq_len: Optional[int] = None,
         lengths: Optional[Tuple[int, int]] = None) -> int:
    os.dup2(2, 1)  # anything printed on stdout becomes log text, not a corrupt event
    die_with_parent()  # never outlive the supervisor (or torchrun) holding a NeuronCore
    run = RunDir(run_path)
    rank = int(os.environ.get("RANK", "0"))
    events = WorkerEvents(run.worker_events(launch, rank))
    from remote_agent.workloads.train import Phase

    phase = Phase()
    try:
        with open(run.spec) as handle:
            spec = RunSpec.from_dict(json.load(handle))
        if spec.workload == "serve":  # a server on the host does the work: no backend in this process
            from remote_agent.workloads.serve import run_serve

            return run_serve(spec, events, run.worker_summary(launch), phase, run.path)
        from remote_agent.backends.registry import resolve_backend

        backend = resolve_backend(spec)
        if spec.workload == "train":
            from remote_agent.workloads.train import run_train

            run_train(spec, backend, events, run.worker_summary(launch), phase, run.path)
        elif spec.workload == "generate":
            from remote_agent.workloads.generate import run_generate

            assert batch_size is not None and lengths is not None
            run_generate(spec, backend, events, run.worker_summary(launch), phase, batch_size, lengths[0],
                         lengths[1], run.path)
        else:
            from remote_agent.workloads.infer import run_infer

            assert batch_size is not None
            run_infer(spec, backend, events, run.worker_summary(launch), phase, batch_size, run.path, seq_len)
        return 0
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            return 130
        from remote_agent.workloads.failures import classify

        events.emit("error", rank=rank, **classify(exc, phase.name))
        return 1
    finally:
        events.close()


def parse_args(argv: List[str]) -> int:
    run_path, launch = argv[0], int(argv[1])
    options = dict(zip(argv[2::2], argv[3::2]))
    batch_size = int(options["--batch-size"]) if "--batch-size" in options else None
    seq_len = int(options["--seq-len"]) if "--seq-len" in options else None
    lengths = (int(options["--input-len"]), int(options["--output-len"])) if "--input-len" in options else None
    return main(run_path, launch, batch_size, seq_len, lengths)


if __name__ == "__main__":
    sys.exit(parse_args(sys.argv[1:]))
