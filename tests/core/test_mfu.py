"""MFU: achieved FLOP/s over the dense peak of the devices a run used (app/core/mfu.py, app/core/peak_flops.py)."""
from __future__ import annotations

import copy
import json

import pytest

from app.core.compare import compare_runs
from app.core.mfu import NOT_COUNTED, apply_mfu, mfu_sentence
from app.core.peak_flops import NO_CPU_PEAK, PeakTableError, gpu_model, parse_peak_csv, peak_for
from app.core.runrecord import StoredRun
from app.reports.efficiency import mfu_sentences
from app.services.peaks import load_peak_table
from remote_agent.probe.neuron import parse_neuron_ls
from remote_agent.protocol import RunSpec
from remote_agent.workloads.flops import count_flops
from remote_agent.workloads.sources import load_model
from tests.conftest import DATA
from tests.core.runs import book

TABLE = load_peak_table()


def recorded_result(name: str) -> dict:
    lines = (DATA / "runs" / name).read_text().splitlines()
    return next(json.loads(line)["result"] for line in lines if '"type":"result"' in line)


@pytest.fixture(scope="module")
def vit_base_training_flops() -> float:
    """What the agent counts today for the recorded run's model and batch (ViT-Base, 224 px, batch 16)."""
    mut = load_model(RunSpec(model="vit_base_patch16_224", batch_sizes=(16,)), 16, None, "/tmp")
    mut.module.train()
    return count_flops(mut, 16, 0, True, "bf16")["flops_per_sample"]


def test_the_recorded_h100_training_used_a_few_percent_of_its_bf16_peak(vit_base_training_flops):
    result = recorded_result("h100-train-vit-base-bf16.events.jsonl")  # recorded before FLOPs were counted
    assert result["env"]["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    unknown = apply_mfu(copy.deepcopy(result), TABLE)["train"]
    assert unknown["mfu"] is None and unknown["mfu_basis"] == {"missing": NOT_COUNTED}

    result["train"]["flops_per_sample"] = vit_base_training_flops
    train = apply_mfu(result, TABLE)["train"]
    throughput = 539.5256713597146  # the recording's samples/s
    assert train["mfu_basis"]["achieved_tflops"] == pytest.approx(vit_base_training_flops * throughput / 1e12)
    assert train["mfu_basis"]["achieved_tflops"] == pytest.approx(56.73, abs=0.01)
    # HBM3 is the SXM part: 1,979 TFLOP/s with sparsity on NVIDIA's sheet, 989.5 dense.
    assert train["mfu_basis"]["device"] == "NVIDIA H100 SXM" and train["mfu_basis"]["peak_tflops"] == 989.5
    assert train["mfu_basis"]["dtype"] == "bf16" and train["mfu_basis"]["devices"] == 1
    assert train["mfu"] == pytest.approx(56.73 / 989.5, abs=1e-4)  # 5.7 %: the seed's loader bounds this loop
    assert mfu_sentence("vit_base_patch16_224", "the H100 host", train["mfu"], train["mfu_basis"]) == (
        "vit_base_patch16_224 on the H100 host used 5.7% of the H100 SXM's bf16 peak (56.7 of 989.5 TFLOP/s)")

    # Compare and the report's sentence read the same figure.
    run = StoredRun(run_id=result["run_id"], host="h100", status="ok", spec=result["spec"], created_at=1.0e9,
                    workload="train", model="vit_base_patch16_224", env=result["env"], result=result)
    doc = compare_runs([run], book())
    assert doc["rows"][0]["mfu"] == train["mfu"] and doc["groups"][0]["mfu"] == train["mfu"]
    assert mfu_sentences(doc["rows"]) == [
        "vit_base_patch16_224 on h100 (instance type unknown) used 5.7% of the H100 SXM's bf16 peak "
        "(56.7 of 989.5 TFLOP/s)."]


@pytest.mark.parametrize(("name", "model"), [
    ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"), ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
    ("NVIDIA H100 NVL", None), ("NVIDIA H200", "NVIDIA H200"), ("NVIDIA A100-SXM4-40GB", "NVIDIA A100 40GB SXM"),
    ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB SXM"), ("NVIDIA A100-PCIE-40GB", None), ("NVIDIA A10G", "NVIDIA A10G"),
    ("NVIDIA L4", "NVIDIA L4"), ("NVIDIA L40S", "NVIDIA L40S"), ("Tesla T4", "NVIDIA T4"),
    ("Tesla V100-SXM2-16GB", "NVIDIA V100 SXM2"), ("NVIDIA GeForce RTX 4090", None),
])
def test_gpus_are_named_word_by_word(name, model):
    # Lightning's matcher read "L40S" as an L4 (a third of its peak): whole words only here.
    assert gpu_model(name) == model


def _gpu_run(name: str, dtype: str | None, precision: str = "bf16") -> dict:
    return {"backend": "cuda", "spec": {"precision": precision}, "env": {"devices": [{"kind": "gpu", "name": name}]},
            "train": {"throughput_samples_per_s": 1000.0, "flops_per_sample": 1e11, "world_size": 1,
                      "matmul_dtype": dtype}}


def test_a_gpu_is_held_to_the_dtype_its_matmuls_ran_in():
    assert apply_mfu(_gpu_run("NVIDIA A100-SXM4-40GB", "bf16"), TABLE)["train"]["mfu_basis"]["peak_tflops"] == 312.0
    # fp32 runs at the fp32 rate unless PyTorch was allowed TF32 (the agent reports which).
    assert apply_mfu(_gpu_run("NVIDIA A100-SXM4-40GB", "fp32"), TABLE)["train"]["mfu_basis"]["peak_tflops"] == 19.5
    assert apply_mfu(_gpu_run("NVIDIA A100-SXM4-40GB", "tf32"), TABLE)["train"]["mfu_basis"]["peak_tflops"] == 156.0
    t4 = apply_mfu(_gpu_run("Tesla T4", "bf16"), TABLE)["train"]
    assert t4["mfu"] is None and t4["mfu_basis"]["missing"].startswith("the T4 has no bf16 tensor cores")
    nvl = apply_mfu(_gpu_run("NVIDIA H100 NVL", "bf16"), TABLE)["train"]
    assert nvl["mfu"] is None
    assert nvl["mfu_basis"]["missing"] == "no dense peak in the table for the GPU NVIDIA H100 NVL"


def test_a_bf16_run_on_a_t4_says_the_chip_has_no_bf16_tensor_cores_not_that_the_table_lacks_a_row():
    # A g4dn (T4, Turing) user who passes --precision bf16: the table's T4 rows are fp16 and fp32 only, because the
    # chip has no bf16 tensor cores; holding the run to the fp16 peak would be a guess.
    run = _gpu_run("Tesla T4", "bf16")
    run["cost"] = {"instance_type": "g4dn.xlarge"}
    train = apply_mfu(run, TABLE)["train"]
    assert train["mfu"] is None
    assert train["mfu_basis"]["missing"] == ("the T4 has no bf16 tensor cores (Turing, before Ampere): its bf16 "
                                             "matmuls run without them, so no peak stands for them")
    assert train["mfu_basis"]["achieved_tflops"] == pytest.approx(100.0)  # what it did is still shown
    assert {r["dtype"] for r in TABLE.rows if r["accelerator"] == "NVIDIA T4"} == {"fp16", "fp32"}
    # A V100 (Volta) likewise; an fp32 run on the T4 has its peak; a gap in the table is still called one.
    v100 = apply_mfu(_gpu_run("Tesla V100-SXM2-16GB", "bf16"), TABLE)["train"]["mfu_basis"]["missing"]
    assert v100.startswith("the V100 SXM2 has no bf16 tensor cores (Volta, before Ampere)")
    assert apply_mfu(_gpu_run("Tesla T4", "fp32", "fp32"), TABLE)["train"]["mfu_basis"]["peak_tflops"] == 8.1
    assert apply_mfu(_gpu_run("NVIDIA A10G", "fp8"), TABLE)["train"]["mfu_basis"]["missing"] == \
        "NVIDIA A10G has no dense fp8 figure in the table"


def _neuron_run(instance_type: str, devices: list[dict], world: int, precision: str = "bf16",
                flags: str = "") -> dict:
    return {"backend": "neuron", "spec": {"precision": precision, "neuron_cc_flags": flags},
            "env": {"instance_type": instance_type, "devices": devices},
            "train": {"throughput_samples_per_s": 1000.0, "flops_per_sample": 1e11, "world_size": world}}


def test_neuroncores_add_up_to_the_published_instance_figures():
    """Per core (chip / cores) x the cores a whole instance has = AWS's figure for the instance."""
    def instance(size: str, dtype: str = "bf16") -> float:
        return next(float(r["dense_tflops"]) for r in TABLE.rows if r["unit"] == "instance" and
                    size in r["instance_family"].split(";") and r["dtype"] == dtype)

    trn1, _ = parse_neuron_ls((DATA / "neuron" / "neuron-ls-trn1-32xlarge.json").read_text())
    basis = apply_mfu(_neuron_run("trn1.32xlarge", trn1, 32), TABLE)["train"]["mfu_basis"]
    assert basis["peak_tflops_per_device"] == 95.0 and basis["peak_tflops"] == instance("trn1.32xlarge") == 3040
    assert basis["device"] == "NeuronCore-v2 (Trainium)" and basis["basis"] == "per NeuronCore (chip / cores)"
    # fp32 on Neuron: neuronx-cc runs the matmuls in bf16 unless told --auto-cast none.
    assert apply_mfu(_neuron_run("trn1.32xlarge", trn1, 32, "fp32"), TABLE)["train"]["mfu_basis"]["dtype"] == "bf16"
    exact = apply_mfu(_neuron_run("trn1.32xlarge", trn1, 32, "fp32", "--auto-cast none"), TABLE)["train"]
    assert exact["mfu_basis"]["dtype"] == "fp32" and exact["mfu_basis"]["peak_tflops"] == instance("trn1.32xlarge",
                                                                                                   "fp32") == 760
    inf2 = [{"kind": "neuron", "cores": 2}] * 12
    assert apply_mfu(_neuron_run("inf2.48xlarge", inf2, 24), TABLE)["train"]["mfu_basis"]["peak_tflops"] == \
        instance("inf2.48xlarge") == 2280
    # trn2.48xlarge: 64 logical cores at LNC=2 (its default) make the published 10.7 PF.
    trn2 = [{"kind": "neuron", "cores": 4, "lnc": 2}] * 16
    basis = apply_mfu(_neuron_run("trn2.48xlarge", trn2, 64), TABLE)["train"]["mfu_basis"]
    assert basis["peak_tflops_per_device"] == 166.75 and basis["peak_tflops"] == pytest.approx(
        instance("trn2.48xlarge"), rel=0.003)
    lnc1 = [{"kind": "neuron", "cores": 8, "lnc": 1}] * 16
    assert apply_mfu(_neuron_run("trn2.48xlarge", lnc1, 128), TABLE)["train"]["mfu_basis"][
        "peak_tflops_per_device"] == 83.375


def test_a_native_data_parallel_inference_is_held_to_the_peak_of_every_core_it_ran_on():
    """TorchNeuron inference over --nproc 2: one process per logical core, each request one batch on its own
    core (samples_per_request == batch_size): the peak is two cores', not one's."""
    trn2 = [{"kind": "neuron", "cores": 4, "lnc": 2}]
    row = {"batch_size": 2, "samples_per_request": 2, "throughput_per_s": 1000.0, "flops_per_sample": 1e11,
           "data_parallel": {"processes": 2}}
    result = {"backend": "neuron", "spec": {"precision": "bf16"}, "infer": [row],
              "env": {"instance_type": "trn2.3xlarge", "devices": trn2}}
    basis = apply_mfu(result, TABLE)["infer"][0]["mfu_basis"]
    assert basis["devices"] == 2 and basis["peak_tflops"] == 2 * basis["peak_tflops_per_device"]


def test_a_cpu_run_has_no_mfu_and_says_why():
    result = recorded_result("train-cpu-tiny.events.jsonl")
    result["train"]["flops_per_sample"] = 1.2e7
    train = apply_mfu(result, TABLE)["train"]
    assert train["mfu"] is None and train["mfu_basis"]["missing"] == NO_CPU_PEAK == "no known peak for a CPU"
    assert train["mfu_basis"]["achieved_tflops"] > 0  # what it did achieve is still shown
    assert peak_for(TABLE, {"backend": "xla", "backend_detail": {"pjrt_device": "CPU"}}, "fp32") == (None, NO_CPU_PEAK)


def test_a_damaged_peak_table_names_its_line():
    with pytest.raises(PeakTableError, match="line 3: dense_tflops 'lots' is not a number"):
        parse_peak_csv("accelerator,instance_family,unit,dtype,dense_tflops,source\n"
                       "Trainium,trn1,core,bf16,95,N\nTrainium,trn1,core,fp32,lots,N\n")
