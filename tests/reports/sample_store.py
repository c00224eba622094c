"""A run store holding a realistic comparison, recorded event by event as `neuronbench run` records.

Figures are in the range of the README's published Neuron numbers: ViT training on
trn1.2xlarge vs inf2.xlarge (3 repeats each, Neuron-style telemetry), BERT-large
inference sweeps on inf1/inf2/g5, and a trn2.48xlarge run that has no public
on-demand price.  Python is ``python -m tests.reports.sample_store DATA_DIR`` to
fill a data dir by hand (e.g. to look at a report).
"""
from __future__ import annotations

import sys

from app.paths import AppPaths
from app.services.pricing import load_pricebook
from app.services.recorder import RunRecorder
from app.services.store import RunStore
from tests.core.runs import infer_run, train_run
from tests.services.streams import ENV, T0, run_stream

COLD = ("2026-11-22 05:53:27.000204:  7415  INFO ||NEURON_CC_WRAPPER||: Call compiler with cmd: ['neuronx-cc', "
        "'--target=trn1', 'compile', '--framework', 'XLA', '/tmp/w/model.MODULE_9214541117211669183+d41d8cd9.hlo.pb']")
CACHED = ("2026-11-22 06:10:06.000307: INFO ||NCC_WRAPPER||: Using a cached neff at /var/tmp/neuron-compile-cache/"
          "neuronxcc-2.21.18209.0+f7c6cf2a3/MODULE_9214541117211669183+d41d8cd9/model.neff. Exiting with a "
          "successfully compiled graph.")


# ViT-Base (224 px) forward + backward per sample, as torch.utils.flop_counter counts it on the meta device.
VIT_B_TRAIN_FLOPS = 105_151_758_336.0


def populate(paths: AppPaths) -> dict[str, list[str]]:
    """Record the sample runs; returns run ids by group name."""
    book = load_pricebook(paths)
    plan = {
        "trn1_train": [train_run("trn1-box", "trn1.2xlarge", t, compile_s=c, flops_per_sample=VIT_B_TRAIN_FLOPS)
                       for t, c in ((100.2, 1840.0), (101.1, 14.0), (99.4, 13.5))],
        "inf2_train": [train_run("inf2-box", "inf2.xlarge", t, compile_s=c, flops_per_sample=VIT_B_TRAIN_FLOPS)
                       for t, c in ((78.1, 1795.0), (79.0, 12.9), (77.6, 13.1))],
        "trn2_train": [train_run("trn2-box", "trn2.48xlarge", 640.0, region="us-east-2")],
        "inf1_infer": [infer_run("inf1-box", "inf1.xlarge", [(1, 284.7, 10.7), (4, 820.0, 22.0)])],
        "inf2_infer": [infer_run("inf2-box", "inf2.xlarge", [(1, 322.58, 3.3), (4, 950.05, 8.85), (16, 1210.0, 21.0)])],
        "g5_infer": [infer_run("g5-box", "g5.xlarge", [(1, 240.0, 5.1), (4, 700.0, 7.2), (16, 1400.0, 14.5)])],
    }
    ids: dict[str, list[str]] = {}
    with RunStore(paths.runs_db) as store:
        for name, runs in plan.items():
            for index, run in enumerate(runs):
                result = run.result
                assert result is not None
                if len(runs) > 1:
                    result["repeat"] = {"index": index + 1, "of": len(runs)}
                env = dict(ENV, instance_type=run.instance_type, region=result["env"]["region"])
                result["env"] = env
                neuron = name != "g5_infer"
                logs = ((COLD,) if index == 0 else (CACHED,)) if name.endswith("_train") and neuron else ()
                t0 = T0 + 3600 * len(ids) + 600 * index
                recorder = RunRecorder.start(store, book, run.host, run.spec, run.run_id)
                for event in run_stream(result, env, t0=t0, samples=40 if name.endswith("train") else 12,
                                        util=85.0 if "trn1" in name else 70.0, logs=logs,
                                        kind="neuroncore" if neuron else "gpu"):
                    recorder(event)
                recorder.finish(dict(result, host=run.host))
                ids.setdefault(name, []).append(run.run_id)
    return ids


if __name__ == "__main__":
    for group, run_ids in populate(AppPaths.resolve(sys.argv[1])).items():
        print(group, " ".join(run_ids))
