"""``neuronbench run``: one spec on one or more hosts, with live progress and a readable summary."""
from __future__ import annotations

import argparse
import json
import sys
import threading
from typing import IO, Any

from app.cli.ec2_plan import confirm_launches, ec2_options, launch_plans
from app.cli.hosts_resolve import prompts_for, transport_for_profile
from app.cli.interrupt import CTRL_C_REASON, EXIT_INTERRUPTED, follow_interruptibly, print_left_running
from app.cli.progress import ProgressPrinter, progress_stream
from app.cli.run_cluster import run_cluster
from app.cli.run_slurm import run_slurm
from app.cli.text import format_repeats, format_result
from app.core.errors import BadSpecError
from app.core.presets import INFER_DEFAULT_BATCH_SIZES, PRESETS
from app.core.quoting import SENTENCE_LIMIT, clean, clean_block
from app.core.results import aggregate_repeats
from app.core.serve_points import slo_limits
from app.core.specs import build_spec, model_config_problem, parse_batch_sizes, parse_model_args, parse_sizes
from app.paths import AppPaths
from app.services.hosts_store import HostsStore
from app.services.model_files import model_file_for
from app.services.multi_run import RunListener, RunTicket, run_on_hosts
from app.services.recorder import RunRecorder, open_recording
from app.services.run_group import RunGroup
from remote_agent.model_ref import TASKS, ModelRefError, parse_model_ref, served_model_id
from remote_agent.protocol import (
    BACKENDS,
    DATA_SOURCES,
    DEFAULT_SERVE_MODEL,
    NEURON_MODES,
    NEURON_STACKS,
    PRECISIONS,
    RENDEZVOUS_TIMEOUT_S,
    SERVERS,
    WORKLOADS,
    RunSpec,
)

# argparse %-formats every help string (for %(default)s): the spec's own "95% interval" must reach it as "%%".
_HELP = {name: meta.get("help", "").replace("%", "%%") for name, meta in RunSpec.field_help().items()}


def register(commands, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser("run", parents=[common], help="run a benchmark on one or more hosts",
                            description="Run the same training or inference workload on every --host.")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--host", action="append", metavar="HOST",
                       help="host to run on (repeat for several, each its own run; `local` is this computer)")
    where.add_argument("--nodes", metavar="H1,H2,...",
                       help="ONE training run across these hosts (torchrun on every node, the first one's rank 0)")
    cluster = p.add_argument_group("Multi-node options (--nodes, or --host of a Slurm login node)")
    cluster.add_argument("--nnodes", type=int, metavar="N", help=_HELP["nnodes"] + " (with --nodes: their number; "
                         "with a Slurm host: the nodes to allocate)")
    cluster.add_argument("--master-addr", metavar="ADDR",
                         help="the address the other nodes reach the first node on (default: the first node's own "
                              "address on its route to the second)")
    cluster.add_argument("--rendezvous-timeout", type=int, default=RENDEZVOUS_TIMEOUT_S, metavar="S",
                         help="seconds the nodes wait for each other to join before the run fails "
                              "(default %(default)s)")
    p.add_argument("--preset", choices=sorted(PRESETS), help="start from a ready-made spec: "
                   + "; ".join(f"{p.name}: {p.title}" for p in PRESETS.values()))
    p.add_argument("--workload", choices=WORKLOADS, help=_HELP["workload"])
    p.add_argument("--model", help=_HELP["model"])
    p.add_argument("--model-arg", action="append", default=[], metavar="KEY=VALUE", help=_HELP["model_args"])
    p.add_argument("--task", choices=TASKS, help=_HELP["task"])
    lengths = p.add_mutually_exclusive_group()
    lengths.add_argument("--seq-len", type=int, metavar="N", help=_HELP["seq_lens"])
    lengths.add_argument("--seq-lens", metavar="128,512", help="inference sequence-length sweep (text models)")
    p.add_argument("--no-check", dest="check", action="store_false", default=None, help=_HELP["check"]
                   + " (on by default; --no-check leaves it out, e.g. for a model too big to copy on the host)")
    p.add_argument("--backend", choices=BACKENDS, help=_HELP["backend"])
    sizes = p.add_mutually_exclusive_group()
    sizes.add_argument("--batch-size", type=int, metavar="N", help=_HELP["batch_sizes"])
    sizes.add_argument("--batch-sizes", metavar="1,4,16", help="inference batch-size sweep")
    llm = p.add_argument_group("LLM workloads (--workload generate|serve)")
    llm.add_argument("--input-lens", metavar="128,512", help=_HELP["input_lens"])
    llm.add_argument("--output-lens", metavar="128,512", help=_HELP["output_lens"])
    llm.add_argument("--concurrency", metavar="1,2,4", help=_HELP["concurrency"])
    llm.add_argument("--server", choices=SERVERS, help=_HELP["server"])
    llm.add_argument("--server-cmd", metavar="CMD", help=_HELP["server_cmd"])
    llm.add_argument("--endpoint", metavar="URL", help=_HELP["endpoint"])
    llm.add_argument("--slo", metavar="ttft_p99=2000ms,...", help=_HELP["slo"])
    llm.add_argument("--compile", action="store_true", default=None, help=_HELP["compile"])
    p.add_argument("--steps", type=int, metavar="N", help=_HELP["steps"])
    p.add_argument("--warmup", type=int, metavar="N", help=_HELP["warmup"])
    p.add_argument("--duration", type=float, metavar="S", help=_HELP["duration"])
    p.add_argument("--min-iters", type=int, metavar="N", help=_HELP["min_iters"])
    p.add_argument("--target-ci", type=float, metavar="PCT", help=_HELP["target_ci"])
    p.add_argument("--precision", choices=PRECISIONS, help=_HELP["precision"])
    p.add_argument("--nproc", type=int, metavar="N", help=_HELP["nproc"])
    p.add_argument("--workers", type=int, metavar="N", help=_HELP["workers"])
    p.add_argument("--data", choices=DATA_SOURCES, help=_HELP["data"] + " (default host)")
    neuron = p.add_argument_group("Neuron options")
    neuron.add_argument("--neuron-cc-flags", metavar="FLAGS", help=_HELP["neuron_cc_flags"])
    neuron.add_argument("--compile-cache", metavar="DIR", help=_HELP["compile_cache"])
    neuron.add_argument("--no-stochastic-rounding", dest="stochastic_rounding", action="store_false", default=None,
                        help="leave NEURON_RT_STOCHASTIC_ROUNDING_EN unset")
    # Issue 22 (Neuron stacks): kept together so other branches' flags merge beside them.
    neuron.add_argument("--neuron-stack", choices=[s for s in NEURON_STACKS if s], help=_HELP["neuron_stack"])
    neuron.add_argument("--neuron-mode", choices=NEURON_MODES, help=_HELP["neuron_mode"] + " (default compile)")
    neuron.add_argument("--no-compile-cache", dest="compile_cache_reuse", action="store_false", default=None,
                        help=_HELP["compile_cache_reuse"])
    neuron.add_argument("--dynamic-shapes", dest="dynamic_shapes", action="store_true", default=None,
                        help=_HELP["dynamic_shapes"])
    p.add_argument("--telemetry-period", type=float, metavar="S", help=_HELP["telemetry_period"])
    p.add_argument("--repeats", type=int, default=1, metavar="N",
                   help="run N times, each in fresh processes; report the median and a bootstrap 95%% interval")
    p.add_argument("--json", action="store_true", help="print the Result JSON list on stdout")
    p.add_argument("--events", metavar="PATH", help="also write the raw event stream (JSON Lines) to PATH")
    p.add_argument("--verbose", action="store_true", help="print error details (tracebacks, stderr tails)")
    ec2 = p.add_argument_group("EC2 hosts (hosts add NAME --ec2 ...)")
    ec2.add_argument("--yes", action="store_true",
                     help="launch the --ec2 hosts' instances without asking (the estimate is still printed)")
    ec2.add_argument("--keep", action="store_true",
                     help="keep the launched instances for the next run instead of terminating them (each still "
                          "shuts itself down at its --max-minutes)")
    p.set_defaults(handler=handle)


def model_source(model: str) -> str | None:
    try:
        return parse_model_ref(model).source
    except ModelRefError:
        return None  # build_spec says what is wrong with it


def spec_from_args(args: argparse.Namespace) -> RunSpec:
    if args.preset is None and args.workload is None:
        raise BadSpecError(f"say what to run: --workload {'|'.join(WORKLOADS)}, or --preset NAME")
    base = PRESETS[args.preset].spec if args.preset else RunSpec(workload=args.workload)
    workload = args.workload or base.workload
    if args.batch_sizes is not None:
        batch_sizes: tuple[int, ...] | None = parse_batch_sizes(args.batch_sizes)
    elif args.batch_size is not None:
        batch_sizes = (args.batch_size,)
    elif workload == "infer" and args.preset is None:
        batch_sizes = INFER_DEFAULT_BATCH_SIZES
    else:
        batch_sizes = None
    if args.repeats < 1:
        raise BadSpecError(f"--repeats must be 1 or more, not {args.repeats}")
    model_args = parse_model_args(args.model_arg) if args.model_arg else None
    seq_lens: tuple[int, ...] | None = None
    if args.seq_lens is not None:
        seq_lens = parse_sizes(args.seq_lens, "--seq-lens")
    elif args.seq_len is not None:
        seq_lens = (args.seq_len,)
    llm_sizes = {name: parse_sizes(getattr(args, name), "--" + name.replace("_", "-"))
                 for name in ("input_lens", "output_lens", "concurrency") if getattr(args, name) is not None}
    model = args.model or base.model
    if workload == "serve" and not args.model and not (args.endpoint or args.server_cmd):
        model = DEFAULT_SERVE_MODEL  # the tiny random Llama whose config ships: "Serve" runs on any computer at once
    start = base.to_dict()
    if model != base.model:
        start.update(task="", seq_lens=[])  # another model than the preset's: the preset's task and lengths go
        if model_source(model) != model_source(base.model):
            start.update(model_args={})  # ... and its model arguments, when they were for another library
    # The file a file: or hf: model brings (its text travels in the spec), read here, on this computer.
    served = workload == "serve" and (args.endpoint or args.server_cmd) and served_model_id(model) is not None
    start.update(model=model, model_file=None if served else model_file_for(model))  # a served id brings no file
    spec = build_spec(start, workload=workload, model_args=model_args, backend=args.backend,
                      batch_sizes=batch_sizes, steps=args.steps, warmup=args.warmup, duration=args.duration,
                      min_iters=args.min_iters, precision=args.precision, nproc=args.nproc, workers=args.workers,
                      data=args.data, target_ci=args.target_ci,
                      neuron_cc_flags=args.neuron_cc_flags, compile_cache=args.compile_cache,
                      stochastic_rounding=args.stochastic_rounding,
                      telemetry_period=args.telemetry_period, task=args.task, seq_lens=seq_lens, check=args.check,
                      server=args.server, server_cmd=args.server_cmd, endpoint=args.endpoint, slo=args.slo,
                      compile=args.compile,
                      neuron_stack=args.neuron_stack, neuron_mode=args.neuron_mode,
                      compile_cache_reuse=args.compile_cache_reuse, dynamic_shapes=args.dynamic_shapes,
                      **llm_sizes)
    problem = model_config_problem(spec)
    if problem:
        raise BadSpecError(problem)
    try:
        slo_limits(spec.slo)  # refused here, in one sentence, before any host starts a server
    except ValueError as exc:
        raise BadSpecError(str(exc)) from None
    return spec


class EventsFile:
    """``--events PATH``: every raw event of every run, in arrival order (hosts run concurrently)."""

    def __init__(self, path: str | None) -> None:
        self.handle: IO[str] | None = open(path, "w", encoding="utf-8") if path else None
        self._lock = threading.Lock()

    def __call__(self, event: dict[str, Any]) -> None:
        if self.handle is not None:
            with self._lock:
                self.handle.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")
                self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def warn(message: str) -> None:
    print(clean(f"neuronbench: warning: {message}", SENTENCE_LIMIT), file=sys.stderr)


def handle(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    paths = AppPaths.resolve(args.data_dir)
    prompts = prompts_for(args)
    hosts = HostsStore(paths.config)
    group = RunGroup(CTRL_C_REASON)  # Ctrl-C acts on every run it holds (app.cli.interrupt)
    if args.nodes:
        events_file = EventsFile(args.events)
        try:
            results = run_cluster(args, spec, paths, prompts, hosts, events_file, warn, group)
        finally:
            events_file.close()
        return report_after(args, results, group)
    profiles = {name: hosts.get(name) for name in args.host}
    slurm_hosts = [name for name, profile in profiles.items() if profile.slurm is not None]
    if slurm_hosts:
        if len(profiles) > 1:
            raise BadSpecError(f"{slurm_hosts[0]} is a Slurm login node: run on it alone (--host {slurm_hosts[0]} "
                               f"--nnodes N)")
        events_file = EventsFile(args.events)
        try:
            results = run_slurm(args, spec, paths, prompts, profiles[slurm_hosts[0]], events_file, warn, group)
        finally:
            events_file.close()
        return report_after(args, results, group)
    if args.nnodes not in (None, 1):
        raise BadSpecError("--nnodes needs --nodes H1,H2,... (SSH hosts, one node per host) or a Slurm host "
                           "(--host NAME of a hosts add --slurm)")
    store, book = open_recording(paths, warn)  # every run lands in the run store, priced
    try:
        plans = launch_plans(list(profiles.values()), spec, args.repeats, book)
        confirm_launches(plans, args.yes)  # nothing is launched before the user knows what it may cost
    except BaseException:
        store.close()
        raise
    launches = ec2_options(args, plans)
    transports = [transport_for_profile(profiles[name], paths, prompts, hosts, launches.get(name))
                  for name in args.host]
    events_file = EventsFile(args.events)
    stream = progress_stream(len(transports))

    def listener_for(ticket: RunTicket) -> RunListener:
        """Called on the host's thread: every host's runs go on at once."""
        label = f" #{ticket.repeat}/{ticket.repeats}" if ticket.repeats > 1 else ""
        printer = ProgressPrinter(ticket.host, spec, label, stream=stream)
        profile = profiles[ticket.host]
        recorder = RunRecorder.start(store, book, ticket.host, spec, ticket.run_id, on_error=warn,
                                     declared_type=profile.instance_type, declared_region=profile.region)

        def on_event(event: dict[str, Any]) -> None:
            recorder(event)  # stored before anything else sees it
            events_file(event)
            printer(event)

        return RunListener(on_event=on_event, on_notice=printer.note, on_result=recorder.finish,
                           on_detached=recorder.abandon)

    try:
        results = follow_interruptibly(lambda: run_on_hosts(transports, spec, args.repeats, listener_for,
                                                            group=group), group,
                                       "cancelling: stopping the runs and every process they started, then waiting "
                                       "until none is left (Ctrl-C again to stop waiting and leave them running)")
    finally:
        events_file.close()
        store.close()
        for transport in transports:
            transport.close()
    return report_after(args, results, group)


def report_after(args: argparse.Namespace, results: list[dict[str, Any]] | None, group: RunGroup) -> int:
    """``report_results``; after a Ctrl-C also the runs left running, and exit status 130."""
    code = report_results(args, results) if results else 0
    if not group.stopped:
        return code
    if results is None:  # stopped while no run had started on its host (one was connecting, or asking)
        print("neuronbench: interrupted", file=sys.stderr)
    print_left_running(group, args.data_dir)
    return EXIT_INTERRUPTED


def report_results(args: argparse.Namespace, results: list[dict[str, Any]]) -> int:
    """The summaries (or the Result JSON) on stdout, a sentence per failure on stderr; the exit status."""
    out = sys.stdout
    if args.json:
        json.dump(results, out, indent=2)
        out.write("\n")
    else:
        for result in results:
            print(format_result(result), file=out)
        if args.repeats > 1:
            print(format_repeats(aggregate_repeats(results)), file=out)
    failures = [r for r in results if r.get("status") != "ok"]
    for result in failures:
        error = result.get("error") or {}
        message = str(error.get("message") or "no reason given")
        host = str(result.get("host"))
        message = message[len(host) + 2:] if message.startswith(f"{host}: ") else message  # said just before
        print(clean(f"neuronbench: error: run {result.get('status')} on {host}: {message}", SENTENCE_LIMIT),
              file=sys.stderr)
        if error.get("detail") and (args.verbose or error.get("kind") in ("runtime", "oom", "internal")):
            tail = "\n".join(clean_block(error["detail"]).strip().splitlines()[-15:])  # the host's traceback
            print("  " + tail.replace("\n", "\n  "), file=sys.stderr)
    return 1 if failures else 0
