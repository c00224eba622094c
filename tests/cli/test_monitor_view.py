"""The monitor screen is a pure function of one sample: recorded reports in, neuron-top style lines out."""
from __future__ import annotations

import io
import json
from pathlib import Path

from app.cli.monitor_cmd import Screen
from app.cli.monitor_view import bar, render, size_text
from remote_agent.monitor.neuron import map_report
from remote_agent.monitor.sampler import merge

NEURON = Path(__file__).resolve().parents[1] / "data" / "neuron"
GIB = 1024 ** 3
PROC = {"host": {"cpu_pct": 50.0, "cpu_per_core_pct": [50.0] * 8, "mem_used": 1, "mem_total": 2},
        "process": {"cpu_pct": 30.0, "rss": 3 * GIB, "pids": 3}, "missing": {}}


def sample_from(name: str, number: int, proc=PROC) -> dict:
    report = json.loads((NEURON / name).read_text().splitlines()[number - 1])
    sample = merge([("neuron-monitor", map_report(report)), ("procfs", proc)], 1.0)
    sample["t"] = 0.0
    return sample


def line_starting(lines, prefix):
    return next(line for line in lines if line.startswith(prefix))


def test_steady_training_shows_each_core_its_memory_and_the_device_sum():
    lines = render(sample_from("neuron-monitor-trn1-2xlarge.jsonl", 20), "trn1", width=100)
    assert lines[0].startswith("neuronbench monitor · trn1 · ")
    assert lines[0].endswith("every 1 s · neuron-monitor, procfs")
    assert "NeuronCore utilisation (avg 88.2%)" in lines
    core0 = line_starting(lines, " ND0 NC0 ")
    assert " 90.1%  mem 3.87 GiB / 16.00 GiB" in core0 and core0.endswith("10.26 TFLOPS")
    assert " 86.4%  mem 3.87 GiB / 16.00 GiB" in line_starting(lines, " ND0 NC1 ")
    assert " ND0 device memory 7.74 GiB / 32.00 GiB (2 cores)" in lines
    # neuron-monitor's host figures win over /proc's, as neuron-top shows them.
    assert line_starting(lines, " vCPU ").endswith(" 39.0%")
    assert line_starting(lines, " memory ").endswith("8.49 GiB / 30.84 GiB")
    assert "Neuron runtime  10 executions, errors 0, p50 176.9 ms, p99 210.3 ms" in lines
    assert line_starting(lines, "    4211  0 ").split()[:6] == ["4211", "0", "5", "0", "175.8", "ms"]
    assert "Workload  CPU 30.0% of the host, RSS 3.00 GiB, 3 process(es)" in lines
    assert not any(line.startswith("N/A because") for line in lines)


def test_missing_figures_read_na_with_the_reason_below():
    no_proc = {"host": {"cpu_pct": None, "cpu_per_core_pct": None, "mem_used": None, "mem_total": None},
               "process": None, "missing": {"host.cpu_pct": "/proc/stat is not readable",
                                            "host.cpu_per_core_pct": "/proc/stat is not readable"}}
    lines = render(sample_from("neuron-monitor-trn1-2xlarge.jsonl", 1, no_proc), "trn1")
    assert line_starting(lines, " vCPU ").endswith("   N/A") and "0.0%" not in line_starting(lines, " vCPU ")
    assert " host.cpu_pct: neuron-monitor's report has no system_data.vcpu_usage group; /proc/stat is not " \
           "readable" in lines
    assert " runtime: no Neuron runtime is running (no process holds a NeuronCore)" in lines
    assert "Processes using NeuronCores: none" in lines
    assert "0.0%  mem 0 B / 16.00 GiB" in line_starting(lines, " ND0 NC0 ")  # idle, not unknown


def test_an_error_event_is_shown_with_its_kind():
    lines = render(sample_from("neuron-monitor-inf2-xlarge.jsonl", 14), "inf2")
    assert line_starting(lines, "Neuron runtime  748 executions, errors 1 (generic 1)")
    assert line_starting(lines, "    5120  0,1 ").split()[:4] == ["5120", "0,1", "748", "1"]


def test_a_gpu_without_power_reading_shows_na_watts():
    sample = merge([("nvidia-smi", {"devices": [
        {"index": 0, "kind": "gpu", "util_pct": 97.0, "mem_used": 18542 * 1024 ** 2, "mem_total": 23028 * 1024 ** 2,
         "power_w": None, "temp_c": 61.0, "sm_clock_mhz": 1710.0}],
        "missing": {"devices.0.power_w": "nvidia-smi reports [N/A] for power.draw"}}), ("procfs", PROC)], 1.0)
    lines = render(dict(sample, t=0.0), "g5")
    gpu = line_starting(lines, " GPU0 ")
    assert " 97.0%  mem 18.11 GiB / 22.49 GiB" in gpu and "N/A W" in gpu and "61 C" in gpu
    assert " devices.0.power_w: nvidia-smi reports [N/A] for power.draw" in lines


def test_bars_and_sizes():
    assert bar(50.0, 10) == "█████░░░░░" and bar(None, 4) == "    " and bar(250.0, 3) == "███"
    assert size_text(0) == "0 B" and size_text(1536) == "1.50 KiB" and size_text(None) == "N/A"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_frames_redraw_in_place_and_the_last_one_stays():
    out = Terminal()
    screen = Screen("trn1", out, width=100)
    first = dict(sample_from("neuron-monitor-trn1-2xlarge.jsonl", 4), type="sample")
    last = dict(sample_from("neuron-monitor-trn1-2xlarge.jsonl", 20), type="sample")
    screen({"type": "hello"})
    screen(first)
    screen(last)
    screen.close()
    text = out.getvalue()
    assert text.startswith("\033[?1049h\033[?25l\033[H")  # alternate screen, cursor hidden, home
    assert text.count("\033[H") == 2 and text.count("\033[J") == 2
    leave = "\033[?25h\033[?1049l"
    assert text[text.index(leave) + len(leave):].splitlines() == render(last, "trn1", 100)
