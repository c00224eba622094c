"""Readable text for the terminal: a host's environment, a run's result, repeat statistics."""
from __future__ import annotations

from typing import Any

from app.cli.llm_text import format_generate_table
from app.cli.monitor_view import size_text
from app.cli.serve_text import format_serve_table
from app.core.ec2_cost import format_minutes, format_usd
from app.core.mfu import mfu_text
from app.core.model_text import check_mark, format_check, format_model
from app.core.numbers import counted, figure
from app.core.partial_runs import partial_sentence
from app.core.quoting import clean_block
from app.core.specs import spec_summary
from app.core.target_ci import stop_text

GIB = 1024 ** 3


def _num(value: float | None, fmt: str = ".3f", missing: str = "N/A") -> str:
    return missing if value is None else format(value, fmt)


def format_env(host: str, env: dict[str, Any]) -> str:
    cpu = env.get("cpu") or {}
    python = env.get("python") or {}
    mem = env.get("mem_bytes")
    lines = [
        f"{host}: {env.get('hostname', '?')} · {env.get('os', '?')}",
        f"  instance   {env.get('instance_type') or 'N/A'} ({env.get('region') or 'region N/A'})",
        f"  cpu        {cpu.get('model') or 'N/A'} · {cpu.get('count')} CPUs ({cpu.get('usable')} usable)",
        f"  memory     {_num(mem / GIB if mem else None, '.1f')} GiB",
        f"  python     {python.get('version')} at {python.get('executable')}",
    ]
    for key in ("torch", "torchvision", "timm", "transformers", "torch_xla", "torch_neuronx", "neuronx_cc"):
        lines.append(f"  {key:<10} {env.get(key) or 'N/A'}")
    for device in env.get("devices") or []:
        if device.get("kind") == "neuron":
            busy = ", busy: " + ", ".join(str(p.get("pid")) for p in device.get("processes") or []) \
                if device.get("processes") else ""
            lines.append(f"  neuron {device.get('index')}   {device.get('cores')} NeuronCores, "
                         f"{_num((device.get('memory_bytes') or 0) / GIB, '.0f')} GiB{busy}")
        else:
            lines.append(f"  gpu {device.get('index')}      {device.get('name')}, "
                         f"{_num((device.get('memory_bytes') or 0) / GIB, '.1f')} GiB")
    stack = env.get("neuron_stack_detail") or {}
    if stack.get("stack") or stack.get("venv"):
        cores = f", {stack['logical_cores']} logical cores" if stack.get("logical_cores") else ""
        lnc = f" (LNC {stack['lnc']})" if stack.get("lnc") else ""
        lines.append(f"  stack      {stack.get('stack') or 'none'}{cores}{lnc}"
                     + (f"; venv {stack['venv']} ({stack.get('venv_stack')})" if stack.get("venv") else "")
                     + (f"; {stack['problem']}" if stack.get("problem") else ""))
    for venv in env.get("neuron_venvs") or []:
        lines.append(f"  venv       {venv.get('path')} (torch-neuronx {venv.get('torch_neuronx') or 'N/A'})")
    missing = env.get("missing") or {}
    if missing:
        lines.append("  not found:")
        lines.extend(f"    {key}: {reason}" for key, reason in sorted(missing.items()))
    for warning in env.get("warnings") or []:
        lines.append(f"  warning: {warning}")
    return clean_block("\n".join(lines))  # names and versions come from the host


def format_stack(result: dict[str, Any]) -> list[str]:
    """Neuron runs: which stack ran (native TorchNeuron or xla), each compile's state, the ops that fell back."""
    backend = result.get("backend_detail") or {}
    if not backend.get("stack"):
        return []
    blocks = [(f"batch {r.get('batch_size')}", r.get("compile") or {}) for r in result.get("infer") or []]
    if result.get("train"):
        blocks.append(("training", (result["train"].get("compile") or {})))
    states = "; ".join(f"{where} {block['state']}" + (f" ({block['measured_by']})" if block.get("measured_by") else "")
                       for where, block in blocks if block.get("state"))
    fell = backend.get("fallback_ops") or []
    return [f"  neuron      {backend['stack']} stack (torch {backend.get('torch')}, torch-neuronx "
            f"{backend.get('torch_neuronx')}); flags via {backend.get('compiler_flags_via') or 'N/A'}"
            + (f"; compile {states}" if states else "")
            + (f"; {len(fell)} op(s) fell back to the host CPU: {', '.join(fell[:6])}" if fell else
               ("; no op fell back to the CPU" if backend["stack"] == "native" else ""))]


def format_result(result: dict[str, Any]) -> str:
    spec = result.get("spec") or {}
    backend = result.get("backend_detail") or {}
    lines = [f"{result.get('host')} · run {result.get('run_id')} · {result.get('status')}",
             f"  {spec_summary(spec) if spec else result.get('workload')}"
             f"{' (ran on ' + str(backend.get('device')) + ')' if backend.get('device') else ''}"]
    if result.get("model"):
        lines.append(f"  model       {format_model(result['model'])}")
    lines += format_stack(result)
    if result.get("status") == "partial":  # the failed points' sentences; the finished ones follow
        lines.append(f"  {partial_sentence(result)}")
    elif result.get("error"):
        lines.append(f"  error: {result['error'].get('message')}")
    train = result.get("train")
    if train:
        step = train.get("step_time_s") or {}
        ci = step.get("ci95") or [None, None]
        compile_ = train.get("compile") or {}
        window = train.get("window")
        tokens = train.get("throughput_tokens_per_s")
        lines += [
            f"  throughput  {_num(train.get('throughput_samples_per_s'), '.2f')} samples/s "
            + (f"· {tokens:,.0f} tokens/s " if tokens else "")
            + f"(global batch {_num(train.get('global_batch'), 'd')}"
            + (f", {train['world_size']} process(es))" if train.get("world_size") else ")"),
            f"  step time   median {_num(step.get('median'), '.4f')} s "
            f"(95% CI {_num(ci[0], '.4f')}–{_num(ci[1], '.4f')}), p90 {_num(step.get('p90'), '.4f')}, "
            f"mean {_num(step.get('mean'), '.4f')} ± {_num(step.get('stdev'), '.4f')}",
            f"  measured    {train.get('steps_measured')} of {train.get('steps_total')} steps"
            + (f" (steps {window[0]}–{window[1]})" if window else "")
            + (f"; stopped {stop_text(train, True)}" if stop_text(train, True) else ""),
        ]
        lines += format_compute(train, "forward + backward")
        if train.get("data"):
            lines.append(f"  data        {format_data(train['data'])}")
        if compile_.get("steps"):
            lines.append(f"  compile     {_num(compile_.get('seconds'), '.2f')} s compiling {compile_.get('count')} "
                         f"graph(s) in step(s) {', '.join(str(i) for i in compile_['steps'])}; "
                         f"excluded from the figures")
        else:
            lines.append("  compile     none (eager execution)")
        if train.get("check"):
            lines.append(f"  check       {format_check(train['check'])}")
    if result.get("nodes"):
        lines.append(f"  nodes       {len(result['nodes'])}: " + ", ".join(format_node(n) for n in result["nodes"]))
    infer = result.get("infer")
    if infer:
        lines += format_infer_table(infer)
    lines += format_generate_table(result)
    lines += format_serve_table(result)
    lines += format_instance(result)
    lines += format_telemetry(result.get("telemetry"))
    for node in (result.get("nodes") or [])[1:]:  # node 0's telemetry is the run's, above
        if node.get("telemetry"):
            lines += [f"  {node.get('host')} (node {node.get('index')}):"] + \
                ["  " + line for line in format_telemetry(node["telemetry"])]
    for warning in result.get("warnings") or []:
        lines.append(f"  warning: {warning}")
    lines += format_refused(result.get("events_refused"))
    return clean_block("\n".join(lines))  # the Result quotes the host (messages, warnings, names)


def format_refused(refused: dict[str, Any] | None) -> list[str]:
    """The events protocol v1 refused (left out of the run, which went on), with the first reasons."""
    if not refused or not refused.get("count"):
        return []
    lines = [f"  refused     {refused['count']:,} event(s) from the agent: not protocol v1, left out"]
    lines += [f"    {reason}" for reason in refused.get("reasons") or []]
    return lines


def format_infer_table(infer: list[dict[str, Any]]) -> list[str]:
    """One line per batch size (and sequence length): latency, throughput, tokens/s, the check."""
    seq = any(row.get("seq_len") is not None for row in infer)
    tokens = any(row.get("tokens_per_s") for row in infer)
    checked = any(row.get("check") for row in infer)
    lines = [f"  {'batch':>5}" + (f" {'seq':>5}" if seq else "") + f" {'compile s':>9} {'requests':>8} "
             f"{'p50 ms':>8} {'p90':>8} {'p95':>8} {'p99':>8} {'mean':>8} {'samples/s':>10}"
             + (f" {'tokens/s':>11}" if tokens else "") + ("  check" if checked else "")]
    for row in infer:
        if row.get("error"):  # a point that failed (a partial sweep): the sentence is above
            lines.append(f"  {row.get('batch_size'):>5}" + (f" {row.get('seq_len') or '':>5}" if seq else "")
                         + f" failed: {row['error'].get('kind') or 'error'}")
            continue
        lat = row.get("latency_ms") or {}
        flag = "" if row.get("p99_reliable", True) else "*"
        lines.append(f"  {row.get('batch_size'):>5}" + (f" {row.get('seq_len') or '':>5}" if seq else "")
                     + f" {_num(row.get('compile_s'), '.2f'):>9} "
                     f"{_num(row.get('iterations'), 'd'):>8} {_num(lat.get('p50'), '.2f'):>8} "
                     f"{_num(lat.get('p90'), '.2f'):>8} "
                     f"{_num(lat.get('p95'), '.2f'):>8} {_num(lat.get('p99'), '.2f') + flag:>8} "
                     f"{_num(lat.get('mean'), '.2f'):>8} {_num(row.get('throughput_per_s'), '.1f'):>10}"
                     + (f" {_num(row.get('tokens_per_s'), ',.0f'):>11}" if tokens else "")
                     + (f"  {check_mark(row.get('check'))}" if checked else ""))
    for row in infer:
        if row.get("error"):
            continue
        stop = stop_text(row, False)
        compute = format_compute(row, "forward")
        if stop or compute:
            lines.append(f"  batch {row.get('batch_size')}" + (f" seq {row['seq_len']}" if row.get("seq_len") else "")
                         + (f": stopped {stop}, {counted(row.get('iterations') or 0, 'request')}" if stop else ":"))
            lines += ["  " + line for line in compute]
    if any(not row.get("p99_reliable", True) for row in infer if not row.get("error")):
        lines.append("  * p99 from fewer than 100 requests: rough")
    if checked:
        lines.append("  check: the compiled model against the eager model on CPU (fp32), on fresh inputs: "
                     + "; ".join(f"batch {row.get('batch_size')}"
                                 + (f" seq {row['seq_len']}" if row.get("seq_len") is not None else "")
                                 + f" {format_check(row['check'], brief=True)}" for row in infer if row.get("check")))
    return lines


def format_compute(part: dict[str, Any], what: str) -> list[str]:
    """``compute     105.2 GFLOP a sample (forward + backward) · 56.73 TFLOP/s · MFU 5.7% of ...``."""
    per_sample = part.get("flops_per_sample")
    if not per_sample and "mfu" not in part:
        return []  # a Result from before FLOPs were counted
    basis = part.get("mfu_basis") or {}
    achieved = basis.get("achieved_tflops", part.get("achieved_tflops"))
    text = (f"  compute     {figure(per_sample / 1e9 if per_sample else None)} GFLOP a sample ({what}) · "
            f"{figure(achieved)} TFLOP/s")
    if part.get("mfu") is not None:
        devices = basis.get("devices") or 1
        text += (f" · MFU {mfu_text(part['mfu'])} of {devices} × {basis.get('device')} {basis.get('dtype')} peak "
                 f"({figure(basis.get('peak_tflops_per_device'))} TFLOP/s each, dense)")
    else:
        text += f" · MFU N/A: {basis.get('missing') or 'not computed'}"
    if basis.get("monitor_tflops") is not None:
        text += f" · neuron-monitor's own count {figure(basis['monitor_tflops'])} TFLOP/s"
    return [text]


def format_node(node: dict[str, Any]) -> str:
    """``trn-b (ranks 2–3, trn1.32xlarge)``, with the node's status when it is not ok."""
    ranks = node.get("ranks") or []
    where = (f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranks[0]}–{ranks[-1]}") if ranks else "no rank joined"
    itype = (node.get("env") or {}).get("instance_type")
    status = "" if node.get("status") == "ok" else f", {node.get('status')}"
    return f"{node.get('host')} ({where}{', ' + itype if itype else ''}{status})"


def format_data(data: dict[str, Any]) -> str:
    """Which input fed the steps: the seed's host loader (with its workers) or one batch on the device."""
    if data.get("source") == "device":
        return "device: one synthetic batch made on the device, reused every step (the input pipeline is not measured)"
    workers = data.get("loader_workers")
    chosen = ", chosen for this host" if data.get("workers_auto") else ""
    return f"host: random batches made on the host (the seed's FakeDataset) through a DataLoader, " \
           f"{workers} loader worker(s){chosen}"


def format_instance(result: dict[str, Any]) -> list[str]:
    """What the benchmark itself cost: a launched instance from launch to terminate, any other priced host
    from the run's start to its end."""
    ec2 = result.get("ec2")
    if not ec2:
        cost = result.get("cost") or {}
        bench = cost.get("benchmark") or {}
        if bench.get("seconds") is None or bench.get("usd_per_hour") is None:
            return []
        nodes = f"{bench['nodes']} x " if (bench.get("nodes") or 1) > 1 else ""
        return [f"  benchmark   cost {format_usd(bench.get('usd'))}: run start to end "
                f"{format_minutes(bench['seconds'])} x {format_usd(bench['usd_per_hour'])}/h "
                f"({nodes}{cost.get('instance_type')} {(bench.get('market') or 'on_demand').replace('_', '-')}), "
                "setup and compile included"]
    market = "spot" if ec2.get("market") == "spot" else "on-demand"
    head = f"  instance    {ec2.get('instance_id')} ({ec2.get('instance_type')} {market} in {ec2.get('region')}, " \
           f"image {ec2.get('ami')})"
    bench = (result.get("cost") or {}).get("benchmark") or {}
    if ec2.get("kept"):
        return [head, "  benchmark   kept running for the next run (--keep): it bills until that run terminates it"]
    if bench.get("seconds") is None:
        return [head, "  benchmark   cost unknown: the instance was not seen terminated (see the warning)"]
    price = f"{format_usd(bench.get('usd_per_hour'))}/h" if bench.get("usd_per_hour") else "no price"
    return [head, f"  benchmark   cost {format_usd(bench.get('usd'))}: launch to terminate "
                  f"{format_minutes(bench['seconds'])} x {price}, boot and compile included"]


_DEVICE_NAMES = {"neuroncore": "NeuronCore", "gpu": "GPU", "cpu": "CPU"}


def format_telemetry(telemetry: dict[str, Any] | None) -> list[str]:
    """Utilisation during the measure phase and memory peaks, in two lines."""
    if not telemetry:
        return []
    missing = telemetry.get("missing") or {}
    measure, peak = telemetry.get("measure"), telemetry.get("peak")
    lines = []
    if measure:
        devices = [d for d in measure.get("devices") or [] if d.get("util_mean_pct") is not None]
        # Where neuron-monitor's runtimes were told apart, the run's utilisation is its own cores', not a
        # neighbour's job on the others (remote_agent/monitor/digest.py).
        others = [p for p in measure.get("other_processes") or [] if p.get("cores")]
        if any(d.get("held_by") == "run" for d in devices):
            devices = [d for d in devices if d.get("held_by") == "run"]
        if devices:
            means = [d["util_mean_pct"] for d in devices]
            p95 = max((d["util_p95_pct"] for d in devices if d.get("util_p95_pct") is not None), default=None)
            kinds = "/".join(sorted({_DEVICE_NAMES.get(d.get("kind"), str(d.get("kind"))) for d in devices}))
            spread = f"; per device {min(means):.1f}–{max(means):.1f}%" if len(devices) > 1 else ""
            # A CPU host is one device, its vCPUs together: "1 CPU" read as if one of them had been measured.
            which = ("the host's vCPUs together" if [d.get("kind") for d in devices] == ["cpu"]
                     else f"{len(devices)} {kinds}{'s' if len(devices) > 1 else ''}{spread}")
            if others:
                which += "; not counted: " + ", ".join(
                    f"pid {p.get('pid')} on core{'s' if len(p['cores']) > 1 else ''} "
                    f"{','.join(str(c) for c in p['cores'])}" for p in others)
            lines.append(f"  utilisation mean {sum(means) / len(means):.1f}% while measuring, p95 {_num(p95, '.1f')}% "
                         f"({which})")
        else:
            lines.append("  utilisation N/A (no device figure was read while measuring)")
    else:
        lines.append(f"  utilisation N/A: {missing.get('measure', 'not sampled')}")
    if peak:
        accelerators = [d for d in peak.get("devices") or [] if d.get("kind") != "cpu"]
        device = ""
        if accelerators:  # a CPU host's "device" memory is the host's: said once, below
            fullest = max((d.get("mem_used") or 0 for d in accelerators), default=0)
            device = f"device {size_text(peak.get('device_mem_used'))}" + (
                f" ({size_text(fullest)} on the fullest) · " if len(accelerators) > 1 else " · ")
        lines.append(f"  peak memory {device}host {size_text(peak.get('host_mem_used'))} of "
                     f"{size_text(peak.get('host_mem_total'))} · workload RSS {size_text(peak.get('process_rss'))}")
    return lines


def format_repeats(rows: list[dict[str, Any]]) -> str:
    lines = ["across repeats (median, bootstrap 95% interval):"]
    for row in rows:
        ci = row.get("ci95") or [None, None]
        size = f" batch {row['batch_size']}" if row.get("batch_size") is not None else ""
        lines.append(f"  {row['host']}{size}: {_num(row['median'], '.2f')} per s "
                     f"({_num(ci[0], '.2f')}–{_num(ci[1], '.2f')}) over {row['repeats']} runs")
    return "\n".join(lines)
