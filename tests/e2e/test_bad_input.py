"""Bad input: one sentence the user can act on, a non-zero exit, and nothing received lost."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from remote_agent.protocol import iter_events
from tests.helpers import paced_model_flags, tiny_model_flags

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRAIN = ["run", "--host", "local", "--workload", "train", "--backend", "cpu", "--workers", "0",
         "--batch-size", "4", "--steps", "6", "--warmup", "1"]


# ------------------------------------------------------------- caught before anything runs (exit 2)
@pytest.mark.parametrize("args, sentence", [
    (["--model-arg", "img_size"], "--model-arg 'img_size' is not KEY=VALUE"),
    (["--batch-size", "0"], "batch size must be a positive integer, not 0"),
    (["--batch-size", "-3"], "batch size must be a positive integer, not -3"),
    (["--steps", "5", "--warmup", "5"], "--steps (5) must be greater than --warmup (5): no step would be measured"),
    (["--repeats", "0"], "--repeats must be 1 or more"),
    (["--batch-sizes", "1,x"], "--batch-sizes '1,x': 'x' is not a whole number"),
])
def test_invalid_specs_are_refused_with_the_flag_to_fix(run_cli, args, sentence):
    base = [a for a in TRAIN if a not in ("--batch-size", "4")] if any(a.startswith("--batch") for a in args) else TRAIN
    out = run_cli(*base, *args)
    assert out.code == 2
    assert sentence in out.stderr
    assert out.stderr.strip().count("\n") == 0  # one line, no traceback
    assert out.stdout == ""


def test_a_run_needs_a_workload(run_cli):
    out = run_cli("run", "--host", "local")
    assert out.code == 2 and "--workload train|infer|generate|serve, or --preset NAME" in out.stderr


def test_an_unknown_host_names_the_known_ones(run_cli):
    out = run_cli("run", "--host", "trn1-box", "--workload", "train")
    assert out.code == 2 and "unknown host 'trn1-box'" in out.stderr


# ------------------------------------------------------------- reported by the agent (exit 1)
@pytest.mark.slow
def test_an_unknown_model_suggests_close_timm_names(run_cli):
    out = run_cli(*TRAIN, "--model", "vit_tinny_patch16_224", "--json")
    assert out.code == 1
    assert "unknown model 'vit_tinny_patch16_224'" in out.stderr
    assert "did you mean vit_tiny_patch16_224" in out.stderr
    result = json.loads(out.stdout)[0]
    assert result["status"] == "failed" and result["error"]["kind"] == "bad_spec"
    assert result["env"]["torch"]  # what was learnt before the failure is kept


@pytest.mark.slow
def test_a_model_argument_timm_rejects_is_named(run_cli):
    out = run_cli(*TRAIN, *tiny_model_flags(), "--model-arg", "bogus_knob=3")
    assert out.code == 1
    assert "model vit_tiny_patch16_224 does not accept --model-arg" in out.stderr
    assert "bogus_knob" in out.stderr


@pytest.mark.slow
def test_a_missing_gpu_says_what_is_missing_and_where_it_looked(run_cli):
    out = run_cli(*[a if a != "cpu" else "cuda" for a in TRAIN], *tiny_model_flags())
    assert out.code == 1
    assert "backend cuda is not available" in out.stderr and "sees no GPU" in out.stderr
    assert "nvidia-smi" in out.stderr


@pytest.mark.slow
def test_a_missing_torch_neuronx_names_the_venvs_it_looked_for(run_cli, cli_env, tmp_path):
    env = dict(cli_env, NEURONBENCH_NEURON_VENV_GLOB=str(tmp_path / "aws_neuronx_venv_pytorch_*"))
    out = run_cli(*[a if a != "cpu" else "neuron" for a in TRAIN], *tiny_model_flags(), env=env)
    assert out.code == 1
    assert "backend neuron needs torch-neuronx, which is not installed for" in out.stderr
    assert str(tmp_path / "aws_neuronx_venv_pytorch_*") in out.stderr
    assert "Neuron SDK 2.32 and later no longer ship torch-neuronx" in out.stderr


# ------------------------------------------------------------- processes that die mid-run
def _start_long_run(cli_env, events_path):
    # The paced model (tests/data/models/paced.py): it trains until the test kills a process, at almost no CPU.
    args = [sys.executable, "-m", "app", *TRAIN[:-4], "--steps", "1000000", "--warmup", "1",
            *paced_model_flags(), "--events", str(events_path)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env,
                            cwd=REPO_ROOT)


def _wait_for_steps(events_path, count, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if events_path.exists():
            events = [json.loads(line) for line in events_path.read_text().splitlines() if line.endswith("}")]
            if sum(1 for e in events if e["type"] == "step") >= count:
                return events
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("no steps in time")


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_a_killed_workload_process_fails_the_run_with_its_stderr_tail(cli_env, tmp_path):
    events_path = tmp_path / "events.jsonl"
    proc = _start_long_run(cli_env, events_path)
    events = _wait_for_steps(events_path, 3, proc)
    worker_pid = next(e["pid"] for e in events if e["type"] == "log" and "pid" in e)
    os.kill(worker_pid, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "the workload process stopped before finishing: it was killed (SIGKILL)" in stderr
    assert "out-of-memory killer" in stderr
    # every event received before the kill is still in the stream, which ends properly
    final = list(iter_events(events_path.read_bytes().splitlines()))
    assert sum(1 for e in final if e["type"] == "step") >= 3
    assert final[-1] == {**final[-1], "type": "end", "status": "failed"}


@pytest.mark.slow
def test_a_killed_agent_is_reported_and_leaves_no_workload_behind(cli_env, tmp_path):
    events_path = tmp_path / "events.jsonl"
    proc = _start_long_run(cli_env, events_path)
    events = _wait_for_steps(events_path, 2, proc)
    supervisor_pid = events[0]["pid"]
    worker_pid = next(e["pid"] for e in events if e["type"] == "log" and "pid" in e)
    os.kill(supervisor_pid, signal.SIGKILL)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 1
    assert "the agent on local stopped before the run ended" in stderr
    assert "its supervisor" in stderr and "was killed by SIGKILL before the run ended" in stderr
    deadline = time.monotonic() + 20
    while _alive(worker_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(worker_pid), "the workload outlived its supervisor"
    # the steps streamed before the agent died were all kept
    assert sum(1 for line in events_path.read_text().splitlines() if '"type":"step"' in line) >= 2
