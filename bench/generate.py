"""generate's overhead: the agent's TTFT and TPOT against a bare ``generate`` loop with the same hook, side by side.

Both sides build the same causal LM from the same config (random weights, the same seed), feed the same
random prompt ids, hold every row to exactly N new tokens (EOS off, ``min_new_tokens = max_new_tokens``)
and stamp each step with the same ``StoppingCriteria`` (remote_agent.backends.generation.step_hook_class),
so TTFT and TPOT have one definition (remote_agent/llm_figures.py).  The bare loop is a few lines: build,
warm up, time calls.  The agent side is the full product path: the real zipapp started by
``LocalTransport`` (supervisor, a worker per sweep point, the numerical check, the event log, the follower,
the app decoding every ``gen_call`` event).  Rounds alternate (bare, agent, bare, agent, ...) so machine
drift hits both; the bare loop runs in a session of its own, as the agent's detached supervisor does
(bench/overhead.py says why).  Prints per round and over all rounds the ratios agent / bare of the median
TTFT and the median TPOT, with PASS or FAIL against the goal (<= 1.03).

    python bench/generate.py [--rounds 3] [--calls 30] [--only TEXT]
    python bench/generate.py --in-process [--calls 60]  (the worker's own per-call work alone, see below)
    python bench/generate.py --bare CONFIG_JSON        (one bare measurement; what the rounds call)

``--in-process`` separates the agent's own per-call work from the machine around it: in one process, calls
alternate between the bare loop and the agent's call path (the backend's Generator, a fresh hook, the
Timeline, the token count and a throttled ``gen_call`` event written to a worker side file), so both see the
same CPU; on a small shared host the end-to-end rounds also carry the supervisor, its telemetry and the app
competing for the same cores.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

GOAL = 1.03
TINY = "neuronbench/tiny-random-llama"
CONFIGS = [
    # name, shipped config (resources/models/ID), model args, batch, prompt tokens, new tokens
    ("tiny random Llama, batch 1, 32 in / 32 out", TINY, {}, 1, 32, 32),
    ("tiny random Llama, batch 4, 128 in / 32 out", TINY, {}, 4, 128, 32),
    ("GPT-2 small shape (2 layers), batch 1, 64 in / 16 out", "gpt2", {"n_layer": 2}, 1, 64, 16),
]


def bare(config: dict) -> dict:
    """One bare measurement: build, warm up at the exact shape, time ``calls`` calls; TTFT and TPOT per call."""
    import torch
    import transformers

    from remote_agent.backends.generation import step_hook_class
    from remote_agent.llm_figures import Timeline, tpot_s, ttft_s
    from remote_agent.workloads import synthetic

    data = json.loads((REPO / "resources" / "models" / config["model"] / "config.json").read_text())
    hf_config = transformers.CONFIG_MAPPING[data["model_type"]].from_dict(data)
    for key, value in config["model_args"].items():
        setattr(hf_config, key, value)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).float().eval()
    pad = hf_config.pad_token_id if isinstance(hf_config.pad_token_id, int) else 0
    model.generation_config.eos_token_id = None
    model.generation_config.pad_token_id = pad
    ids = synthetic.token_ids(config["batch"], config["input_len"], hf_config.vocab_size, 0)
    mask = torch.ones_like(ids)
    n = config["output_len"]
    hook_class = step_hook_class()
    clock = time.perf_counter

    def call() -> Timeline:
        hook = hook_class(lambda: None, clock)
        start = clock()
        with torch.no_grad():
            out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                 do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=pad,
                                 stopping_criteria=transformers.StoppingCriteriaList([hook]))
        end = clock()
        assert out.shape[1] - config["input_len"] == n and len(hook.stamps) == n
        return Timeline(start, tuple(hook.stamps), n, config["input_len"], config["batch"], end=end)

    for _ in range(config["warmup"] + 1):  # the first call, then the warm-up calls (as the agent does)
        call()
    calls = [call() for _ in range(config["calls"])]
    return {"ttft": [ttft_s(c) for c in calls], "tpot": [tpot_s(c) for c in calls]}


def in_process(config: dict, calls: int) -> dict:
    """Interleaved in one process: bare ``model.generate`` vs the agent's call path; the medians of each."""
    import os

    import torch
    import transformers

    from remote_agent.backends.cpu import CpuBackend
    from remote_agent.backends.generation import Shape, step_hook_class
    from remote_agent.eventlog import WorkerEvents
    from remote_agent.llm_figures import Timeline, tpot_s, ttft_s
    from remote_agent.protocol import RunSpec
    from remote_agent.workloads import synthetic
    from remote_agent.workloads.generate import count_new_tokens, emit_call

    data = json.loads((REPO / "resources" / "models" / config["model"] / "config.json").read_text())
    hf_config = transformers.CONFIG_MAPPING[data["model_type"]].from_dict(data)
    for key, value in config["model_args"].items():
        setattr(hf_config, key, value)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(hf_config).float().eval()
    n, s_in, batch = config["output_len"], config["input_len"], config["batch"]
    shape = Shape(batch, s_in, n)
    generator = CpuBackend(RunSpec(workload="generate")).generator(model, shape, 0, "", "bench")
    generator.load()
    ids = synthetic.token_ids(batch, s_in, hf_config.vocab_size, 0)
    mask = torch.ones_like(ids)
    hook_class = step_hook_class()
    clock = time.perf_counter
    where = {"batch_size": batch, "input_len": s_in, "output_len": n}
    with tempfile.TemporaryDirectory() as tmp:
        events = WorkerEvents(os.path.join(tmp, "events.jsonl"))

        def bare_call() -> Timeline:
            hook = hook_class(lambda: None, clock)
            start = clock()
            with torch.no_grad():
                out = model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=n, min_new_tokens=n,
                                     do_sample=False, num_beams=1, eos_token_id=None, pad_token_id=0,
                                     stopping_criteria=transformers.StoppingCriteriaList([hook]))
            assert out.shape[1] - s_in == n
            return Timeline(start, tuple(hook.stamps), n, s_in, batch, end=clock())

        def agent_call(index: int) -> Timeline:
            hook = hook_class(generator.sync, clock)
            start = clock()
            out = generator.generate(ids, mask, [hook])
            end = clock()
            count_new_tokens(out, s_in, n, len(hook.stamps), shape)
            timeline = Timeline(start, tuple(hook.stamps), n, s_in, batch, end=end)
            emit_call(events, where, "measure", index, timeline)
            return timeline

        for index in range(config["warmup"] + 1):
            bare_call()
            agent_call(index)
        sides = {"bare": [], "agent": []}
        for index in range(calls):  # the order alternates too: neither side always runs second
            if index % 2:
                sides["agent"].append(agent_call(index))
                sides["bare"].append(bare_call())
            else:
                sides["bare"].append(bare_call())
                sides["agent"].append(agent_call(index))
        events.close()
    return {side: {"ttft": statistics.median(ttft_s(t) for t in got),
                   "tpot": statistics.median(tpot_s(t) for t in got)} for side, got in sides.items()}


def run_bare(config: dict) -> dict:
    out = subprocess.run([sys.executable, __file__, "--bare", json.dumps(config)], capture_output=True, text=True,
                         check=True, start_new_session=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_agent(paths, config: dict) -> dict:
    """The median TTFT and TPOT of one run through the full product path."""
    from app.services.model_files import model_file_for
    from app.services.session import RunSession
    from app.services.transport import LocalTransport
    from remote_agent.protocol import RunSpec

    model = f"hf:{config['model']}"
    spec = RunSpec(workload="generate", model=model, model_file=model_file_for(model), task="causal-lm",
                   model_args=config["model_args"], batch_sizes=(config["batch"],),
                   input_lens=(config["input_len"],), output_lens=(config["output_len"],), backend="cpu",
                   warmup=config["warmup"], min_iters=config["calls"], duration=0.01, check=False)
    result = RunSession(LocalTransport(paths), spec).run()
    assert result["status"] == "ok", result["error"]
    [point] = result["generate"]
    return {"ttft": point["ttft_ms"]["p50"] / 1000.0, "tpot": point["tpot_ms"]["p50"] / 1000.0,
            "calls": point["calls"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=30, help="timed calls a side a round")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--only", metavar="TEXT", help="only the configurations whose name contains TEXT")
    parser.add_argument("--in-process", action="store_true",
                        help="bare and the agent's call path interleaved in one process (the worker's own cost)")
    parser.add_argument("--bare", metavar="CONFIG_JSON", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare:
        print(json.dumps(bare(json.loads(args.bare))))
        return
    if args.in_process:
        failed = []
        for name, model, model_args, batch, s_in, s_out in CONFIGS:
            if args.only and args.only not in name:
                continue
            config = {"model": model, "model_args": model_args, "batch": batch, "input_len": s_in,
                      "output_len": s_out, "warmup": args.warmup}
            got = in_process(config, args.calls)
            words = []
            for metric in ("ttft", "tpot"):
                ratio = got["agent"][metric] / got["bare"][metric]
                if ratio > GOAL:
                    failed.append(f"{name} {metric.upper()}")
                words.append(f"{metric.upper()} bare {got['bare'][metric] * 1000:.3f} ms, agent "
                             f"{got['agent'][metric] * 1000:.3f} ms, ratio {ratio:.3f} "
                             f"{'PASS' if ratio <= GOAL else 'FAIL'}")
            print(f"{name} (in one process, {args.calls} calls a side): " + "; ".join(words), flush=True)
        print("verdict: " + ("PASS" if not failed else "FAIL (" + "; ".join(failed) + ")"))
        sys.exit(1 if failed else 0)
    from app.paths import AppPaths

    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = AppPaths.resolve(tmp)
        for name, model, model_args, batch, s_in, s_out in CONFIGS:
            if args.only and args.only not in name:
                continue
            config = {"model": model, "model_args": model_args, "batch": batch, "input_len": s_in,
                      "output_len": s_out, "warmup": args.warmup, "calls": args.calls}
            print(f"{name}: agent / bare median TTFT and TPOT, goal <= {GOAL:.2f}", flush=True)
            ratios = {"ttft": [], "tpot": []}
            sides = {"bare": {"ttft": [], "tpot": []}, "agent": {"ttft": [], "tpot": []}}
            for number in range(1, args.rounds + 1):
                plain = run_bare(config)
                agent = run_agent(paths, config)
                words = []
                for metric in ("ttft", "tpot"):
                    base = statistics.median(plain[metric])
                    sides["bare"][metric].append(base)
                    sides["agent"][metric].append(agent[metric])
                    ratio = agent[metric] / base
                    ratios[metric].append(ratio)
                    words.append(f"{metric.upper()} bare {base * 1000:.3f} ms, agent {agent[metric] * 1000:.3f} ms, "
                                 f"ratio {ratio:.3f}")
                print(f"  round {number}: " + "; ".join(words), flush=True)
            overall = []
            for metric in ("ttft", "tpot"):
                ratio = statistics.median(sides["agent"][metric]) / statistics.median(sides["bare"][metric])
                passed = ratio <= GOAL
                overall.append(passed)
                print(f"  all rounds {metric.upper()}: bare {statistics.median(sides['bare'][metric]) * 1000:.3f} ms, "
                      f"agent {statistics.median(sides['agent'][metric]) * 1000:.3f} ms, ratio {ratio:.3f} -> "
                      f"{'PASS' if passed else 'FAIL'}", flush=True)
            if not all(overall):
                failed.append(name)
    print("verdict: " + ("PASS" if not failed else "FAIL (" + "; ".join(failed) + ")"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
