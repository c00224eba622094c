"""The server a serve run starts is part of the run: the real agent (``python -m remote_agent run``) launches a
mock OpenAI server through ``--server-cmd``, and no process of it is left after the end, a cancel, the
supervisor's SIGKILL, or a failed start (looked up in /proc)."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from remote_agent.protocol import RunSpec
from remote_agent.serving.server import ServerError, ServerProcess, free_port
from tests.serving.mock_openai import MockServer

REPO = Path(__file__).resolve().parents[2]
MOCK = str(REPO / "tests" / "serving" / "mock_openai.py")
VLLM_LOGS = REPO / "tests" / "data" / "server-logs"  # real vLLM 0.32 CPU logs (see its README)


def mock_cmd(*extra: str) -> str:
    return " ".join([sys.executable, MOCK, "--port", "{port}", *extra])


def serve_spec(**fields) -> dict:
    values = dict(workload="serve", input_lens=(4,), output_lens=(3,), concurrency=(1, 2), duration=0.2,
                  min_iters=5, telemetry_period=0)
    values.update(fields)
    return RunSpec(**values).to_dict()


@pytest.fixture
def agent_home(tmp_path, monkeypatch):
    home = tmp_path / "agent-home"
    monkeypatch.setenv("NEURONBENCH_AGENT_HOME", str(home))
    return home


def start_run(run_id: str, spec: dict) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-m", "remote_agent", "run", "--run-id", run_id], cwd=str(REPO),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    proc.stdin.write(json.dumps(spec))
    proc.stdin.close()
    return proc


def read_until(proc: subprocess.Popen, wanted) -> tuple[list, dict | None]:
    events = []
    for line in proc.stdout:
        event = json.loads(line)
        events.append(event)
        if wanted(event):
            return events, event
    return events, None


def run_pids(run_id: str) -> list[int]:
    """Live (not zombie) processes carrying the run's marker."""
    from remote_agent.orphan import run_processes

    return [pid for pid in run_processes(run_id) if alive(pid)]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids, seconds=30.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = [pid for pid in pids if alive(pid)]
        if not left:
            return []
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


def server_pid(events: list) -> int:
    for event in events:
        match = re.match(r"server started \(pid (\d+)\)", event.get("message", "")) if event["type"] == "log" else None
        if match:
            return int(match.group(1))
    raise AssertionError("no server started event")


def test_a_run_measures_the_servers_levels_and_stops_it(agent_home):
    proc = start_run("r-serve-ok", serve_spec(server_cmd=mock_cmd("--child"), slo="ttft_p99=2s,tpot_p99=1s"))
    events, _ = read_until(proc, lambda e: e["type"] == "end")
    proc.wait(timeout=30)
    assert events[-1]["status"] == "ok", [e for e in events if e["type"] == "error"]
    result = next(e for e in events if e["type"] == "result")["result"]
    serve = result["serve"]
    levels = [e["level"] for e in events if e["type"] == "serve_level"]
    assert [lv.get("concurrency") for lv in levels][:2] == [1, 2]
    assert [lv.get("concurrency") for lv in serve["levels"]][:2] == [1, 2]
    assert all(lv["errors"] == 0 and lv["completed"] >= 5 for lv in serve["levels"])
    assert serve["operating_point"] == "goodput" and serve["slo_unmet"] is None
    assert serve["goodput_point"]["output_tok_s"] == max(lv["output_tok_s"] for lv in serve["levels"])
    assert serve["levels"][0]["token_source"] == "usage"
    assert any(lv.get("rate") for lv in serve["levels"])  # the SLO's Poisson rate search ran
    assert "server.log" in serve["server"]["log"] and os.path.exists(serve["server"]["log"])
    assert wait_gone([server_pid(events)]) == []
    assert wait_gone(run_pids("r-serve-ok")) == []  # the server's own child too
    # the server's own output streams live as log lines (and stays whole in server.log)
    assert any(e["type"] == "log" and e["message"].startswith("mock server pid ") for e in events)


def test_an_slo_no_level_meets_is_a_result_with_its_sentence(agent_home):
    proc = start_run("r-serve-slo", serve_spec(server_cmd=mock_cmd("--ttft", "0.06"), concurrency=(1,),
                                               slo="ttft_p99=20ms"))
    events, _ = read_until(proc, lambda e: e["type"] == "end")
    proc.wait(timeout=30)
    assert events[-1]["status"] == "ok"
    serve = next(e for e in events if e["type"] == "result")["result"]["serve"]
    assert re.fullmatch(r"no load met p99 TTFT ≤ 20 ms; the lowest was \d+ ms at (concurrency 1|[0-9.]+ requests/s "
                        r"\(Poisson\))", serve["slo_unmet"]), serve["slo_unmet"]
    assert serve["goodput_point"] is None


@pytest.mark.parametrize("mode, kind, sentence", [
    ("die", "runtime", r"the server exited with code 3 during start; its log says: RuntimeError: the mock refuses to "
                       r"start, on purpose"),
    ("oom", "oom", r"the server exited with code 1: the model does not fit the device memory; its log says: "
                   r"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
])
def test_a_server_that_fails_to_start_fails_the_run_with_its_log_tail(agent_home, mode, kind, sentence):
    run_id = "r-serve-" + mode
    proc = start_run(run_id, serve_spec(server_cmd=mock_cmd("--mode", mode)))
    events, _ = read_until(proc, lambda e: e["type"] == "end")
    proc.wait(timeout=30)
    errors = [e for e in events if e["type"] == "error"]
    assert events[-1]["status"] == "failed"
    assert errors[0]["kind"] == kind and re.fullmatch(sentence, errors[0]["message"]), errors[0]["message"]
    assert wait_gone(run_pids(run_id)) == []


def test_an_endpoint_that_is_not_openai_is_refused_in_one_sentence(agent_home):
    with MockServer(mode="not_openai") as mock:
        proc = start_run("r-serve-404", serve_spec(endpoint=f"http://127.0.0.1:{mock.port}/v1"))
        events, _ = read_until(proc, lambda e: e["type"] == "end")
        proc.wait(timeout=30)
    errors = [e for e in events if e["type"] == "error"]
    assert errors[0]["message"] == (f"http://127.0.0.1:{mock.port} is not an OpenAI-compatible endpoint: "
                                    "GET /v1/models answered HTTP 404")
    assert errors[0]["kind"] == "bad_spec" and events[-1]["status"] == "failed"


def test_an_endpoint_run_measures_a_server_already_running(agent_home):
    with MockServer(ttft=0.01, itl=0.002) as mock:
        proc = start_run("r-serve-endpoint", serve_spec(endpoint=f"http://127.0.0.1:{mock.port}"))
        events, _ = read_until(proc, lambda e: e["type"] == "end")
        proc.wait(timeout=30)
    assert events[-1]["status"] == "ok"
    serve = next(e for e in events if e["type"] == "result")["result"]["serve"]
    assert serve["server"]["server"] == "endpoint" and serve["server"]["model"] == "mock/model"
    assert serve["operating_point"] == "saturation"


def test_cancel_stops_the_server_and_its_children(agent_home):
    proc = start_run("r-serve-cancel", serve_spec(server_cmd=mock_cmd("--child"), duration=600.0))
    events, _ = read_until(proc, lambda e: e["type"] == "phase" and e["name"] == "measure")
    server = server_pid(events)
    pids = run_pids("r-serve-cancel")
    assert server in pids and len(pids) >= 4  # supervisor, worker, server, the server's child
    cancel = subprocess.run([sys.executable, "-m", "remote_agent", "cancel", "r-serve-cancel"], cwd=str(REPO),
                            capture_output=True, text=True, timeout=60, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert cancel.returncode == 0, cancel.stderr
    rest, _ = read_until(proc, lambda e: e["type"] == "end")
    proc.wait(timeout=30)
    assert rest[-1]["status"] == "cancelled"
    assert wait_gone(pids) == []


def test_the_server_dies_with_the_runs_agent(agent_home):
    proc = start_run("r-serve-kill", serve_spec(server_cmd=mock_cmd("--child"), duration=600.0))
    events, _ = read_until(proc, lambda e: e["type"] == "phase" and e["name"] == "measure")
    supervisor = events[0]["pid"]
    pids = run_pids("r-serve-kill")
    os.kill(supervisor, signal.SIGKILL)
    proc.wait(timeout=30)
    assert wait_gone(pids) == []


def test_a_port_in_use_is_said_before_anything_starts(tmp_path):
    with MockServer() as mock:
        server = ServerProcess([sys.executable, MOCK, "--port", str(mock.port)], mock.port, str(tmp_path / "log"))
        with pytest.raises(ServerError) as caught:
            server.start()
    assert str(caught.value) == (f"port {mock.port} on the host is in use already (another server?): stop it, or "
                                 "let the agent pick a port ({port} in --server-cmd)")
    assert server.proc is None


def test_a_server_that_never_answers_is_stopped_with_its_log_tail(tmp_path):
    port = free_port()
    server = ServerProcess([sys.executable, MOCK, "--port", str(port), "--startup", "600"], port,
                           str(tmp_path / "server.log"))
    server.start()
    try:
        with pytest.raises(ServerError) as caught:
            server.wait_ready(1.0)
    finally:
        server.stop(grace_s=5)
    assert re.fullmatch(r"the server was not ready after 1 s \(GET /v1/models: cannot reach "
                        r"http://127.0.0.1:\d+/v1/models: .*\); its last log lines: mock server pid \d+ starting on "
                        r"port \d+", str(caught.value)), str(caught.value)
    assert not alive(server.pid)


def test_a_vllm_that_cannot_start_is_one_sentence_with_vllms_own_cause(tmp_path):
    """vLLM logs its root cause first and then wrappers ("Engine core initialization failed. See root cause above"):
    the sentence carries the cause.  The log is real vLLM CPU's, told to keep a KV cache larger than the host."""
    log = VLLM_LOGS / "vllm-0.32-cpu-kv-cache-too-big.log"
    port = free_port()
    server = ServerProcess([sys.executable, "-c", f"import sys; sys.stdout.write(open({str(log)!r}).read()); "
                                                  "sys.exit(1)"], port, str(tmp_path / "server.log"))
    server.start()
    with pytest.raises(ServerError) as caught:
        server.wait_ready(600)
    assert caught.value.kind == "oom"
    assert str(caught.value) == (
        "the server exited with code 1: the model does not fit the device memory; its log says: ValueError: "
        "Available memory on node 0 (19.66/21.71 GiB) on kv cache allocation is less than requested memory for kv "
        "(4000.0 GiB). Decrease --kv-cache-memory-bytes, VLLM_CPU_KVCACHE_SPACE, or reduce CPU memory used by other "
        "processes.")


def test_a_server_built_for_a_cpu_this_one_is_not_is_named_as_such(tmp_path):
    """vLLM's CPU build on a CPU without its instruction set dies of SIGILL, with no line of its own."""
    server = ServerProcess([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGILL)"],
                           free_port(), str(tmp_path / "server.log"))
    server.start()
    with pytest.raises(ServerError) as caught:
        server.wait_ready(600)
    assert str(caught.value) == ("the server was killed by signal 4 (an illegal instruction: this CPU lacks an "
                                 "instruction set the server was built for, such as AVX-512 or AVX2 for vLLM's CPU "
                                 "build) during start; its last log lines: (none)")


def test_a_server_error_mid_stream_carries_the_cause_from_the_servers_log(agent_home):
    """vLLM streams only "EngineCore encountered an issue. See stack trace (above) for the root cause."; the
    cause is in its log (here real vLLM CPU's, serving a model of head size 16), and the run's sentence says it."""
    log = VLLM_LOGS / "vllm-0.32-cpu-head-dim-16.log"
    command = f"sh -c 'cat {log}; exec {sys.executable} {MOCK} --mode mid_error --port {{port}}'"
    proc = start_run("r-serve-mid", serve_spec(server_cmd=command))
    events, _ = read_until(proc, lambda e: e["type"] == "end")
    proc.wait(timeout=30)
    errors = [e for e in events if e["type"] == "error"]
    assert events[-1]["status"] == "failed"
    assert errors[0]["message"] == (
        "the server's first request failed: the server reported an error mid-stream: engine died; the server's log "
        "says: RuntimeError: Unsupported CPU attention configuration: head_dim=16 isa=2 kv_cache_idx=0")
    assert wait_gone(run_pids("r-serve-mid")) == []
