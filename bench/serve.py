"""The serve workload's client against a server of known timings: how far our TTFT/TPOT are from the truth.

The reference here is the mock OpenAI server's *set* timings (tests/serving/mock_openai.py, its own process): it
sleeps TTFT before the first token and ITL between tokens, so a perfect client measures TTFT = set TTFT and
TPOT = set ITL.  Printed as ratios (measured / set) per concurrency level, in one run; the excess is the client's
and the loopback's overhead (plus the mock's own HTTP work and its sleeps' overshoot), with client and server
sharing the machine's CPUs.

    python bench/serve.py [--ttft-ms 50] [--itl-ms 10] [--tokens 32] [--requests 40] [--levels 1,4,16]

Against a real server and the client people trust (`vllm bench serve` on real vLLM), see
bench/serve_vs_vllm.py.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from remote_agent import llm_figures as figures  # noqa: E402
from remote_agent.serving.client import Client  # noqa: E402
from remote_agent.serving.load import LevelRule, closed_loop  # noqa: E402
from remote_agent.serving.server import free_port  # noqa: E402
from remote_agent.serving.sse import Endpoint, list_models, make_request  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ttft-ms", type=float, default=50.0)
    parser.add_argument("--itl-ms", type=float, default=10.0)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--levels", default="1,4,16")
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "serving" / "mock_openai.py"), "--port", str(port),
                               "--ttft", str(args.ttft_ms / 1000), "--itl", str(args.itl_ms / 1000)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                list_models("127.0.0.1", port)
                break
            except Exception:
                time.sleep(0.1)
        endpoint = Endpoint("127.0.0.1", port, "mock/model")
        print(f"mock server (own process): TTFT {args.ttft_ms:g} ms, ITL {args.itl_ms:g} ms, {args.tokens} tokens a "
              f"request; {os.cpu_count()} CPUs")
        print(f"{'level':>6} {'reqs':>5} {'TTFT p50 ms':>12} {'ratio':>6} {'TTFT p99':>9} {'TPOT p50 ms':>12} "
              f"{'ratio':>6} {'ITL p50':>8} {'ratio':>6} {'out tok/s':>10} {'ideal':>8}")
        client = Client(endpoint)
        for level in [int(x) for x in args.levels.split(",")]:
            def make(i: int):
                return make_request(endpoint, "w " * 16, 16, args.tokens)
            done = closed_loop(client, make, level, LevelRule(args.requests, 0.0, None, args.requests),
                               threading.Event())
            s = figures.serve_summary([o.timeline for o in done.outcomes])
            ideal = level * args.tokens / ((args.ttft_ms + (args.tokens - 1) * args.itl_ms) / 1000)
            ttft, tpot, itl = s["ttft_ms"], s["tpot_ms"], s["itl_ms"]
            print(f"{level:>6} {s['completed']:>5} {ttft['p50']:>12.2f} {ttft['p50'] / args.ttft_ms:>6.3f} "
                  f"{ttft['p99']:>9.2f} {tpot['p50']:>12.2f} {tpot['p50'] / args.itl_ms:>6.3f} "
                  f"{itl['p50']:>8.2f} {itl['p50'] / args.itl_ms:>6.3f} {s['output_tok_s']:>10.1f} "
                  f"{ideal:>8.1f}")
        client.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
