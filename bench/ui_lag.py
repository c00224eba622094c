"""How responsive the desktop app stays with many live runs: Qt event-loop lag and memory over time.

16 runs (by default) stream recorded event logs (tests/data/runs: a real torch-xla training and a
real inference sweep, looped) through the real session layer -- RunSession and EventStream over a
replaying AgentProcess, one worker thread per run, ControlledRun and the bridge's queued signals --
into the real MainWindow, at 10 events/s each plus one telemetry sample per second (hand-mapped
neuron-monitor samples of a trn1.2xlarge).  Meanwhile a 5 ms PreciseTimer measures the event loop's
lag: how late each tick fires.  Target: p99 <= 30 ms, and memory (RSS) flat after the first minute.

    python bench/ui_lag.py                 # 16 runs for 10 minutes (offscreen)
    python bench/ui_lag.py --minutes 2     # shorter
    python bench/ui_lag.py --runs 1        # the same, one run, for comparison
    python bench/ui_lag.py --vcpus 192     # CPU-only hosts with 192 vCPUs each (synthetic samples in the
                                           # agent's format): a bar chart and a heat strip row per vCPU
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings, Qt, QTimer

from app.core.hosts import HostProfile
from app.paths import AppPaths
from app.services.replay import ReplayTransport, live_stream, read_events
from app.services.synthetic_telemetry import cpu_host_samples
from app.ui.app import make_application
from app.ui.main_window import MainWindow
from app.ui.settings import AppSettings
from remote_agent.stats import percentile

RUNS = Path(__file__).resolve().parents[1] / "tests" / "data" / "runs"
TICK_MS = 5
WARMUP_S = 60.0  # memory is compared from here on: the views' ring buffers and Qt's caches fill first


def rss_mib() -> float:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class ReplayHosts:
    """Hosts whose agents replay recorded runs forever, paced like live ones."""

    def __init__(self, count: int, rate: float, vcpus: int | None = None) -> None:
        train = read_events(RUNS / ("train-cpu-tiny.events.jsonl" if vcpus else "train-xla-tiny.events.jsonl"))
        infer = read_events(RUNS / "infer-cpu-tiny.events.jsonl")
        # A CPU host's samples carry one share per vCPU: the per-vCPU bars and heat strip are drawn.
        samples = cpu_host_samples(vcpus, 120) if vcpus else read_events(RUNS / "samples-trn1-2xlarge.jsonl")
        self.transports: dict[str, ReplayTransport] = {}
        for i in range(count):
            events = train if i % 2 == 0 else infer
            shifted = samples[i % len(samples):] + samples[: i % len(samples)]

            def stream(events=events, shifted=shifted):
                return live_stream(events, shifted, every=int(rate), loops=None)

            self.transports[f"host{i:02d}"] = ReplayTransport(
                stream, f"host{i:02d}", pace=lambda e: 0.0 if e.get("type") == "sample" else 1.0 / rate)

    def hosts(self) -> list[HostProfile]:
        return [HostProfile(name=name, hostname=name) for name in self.transports]

    def transport_for(self, host: HostProfile):
        return self.transports[host.name]

    def price(self, host, instance_type, region=None):
        return None


class LagProbe:
    """A 5 ms timer; each tick records how late it came."""

    def __init__(self) -> None:
        self.lateness_ms: list[float] = []
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self.tick)
        self.last = time.perf_counter()

    def start(self) -> None:
        self.last = time.perf_counter()
        self.timer.start()

    def tick(self) -> None:
        now = time.perf_counter()
        self.lateness_ms.append(max(0.0, (now - self.last) * 1000.0 - TICK_MS))
        self.last = now


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=16)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=10.0, help="events per second per run (besides samples)")
    parser.add_argument("--baseline-s", type=float, default=20.0,
                        help="first measure the idle window this long (the machine's own timer noise)")
    parser.add_argument("--vcpus", type=int, default=None,
                        help="feed CPU-only hosts with this many vCPUs (synthetic samples) instead of the trn1 samples")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)

    app = make_application()
    import tempfile

    with tempfile.TemporaryDirectory(prefix="nb-ui-lag-") as scratch:
        settings = AppSettings(QSettings(str(Path(scratch) / "settings.ini"), QSettings.Format.IniFormat))
        provider = ReplayHosts(args.runs, args.rate, args.vcpus)
        window = MainWindow(AppPaths.resolve(scratch), settings, provider, probe_hosts=False, load_models=False)
        window.resize(1440, 900)
        window.show()
        for host in provider.hosts():
            window.sidebar.set_checked(host.name, True)

        # 1. The same window with nothing running: how late a 5 ms timer is on this machine anyway.
        idle = LagProbe()
        idle.start()
        QTimer.singleShot(int(args.baseline_s * 1000), lambda: app.exit(0))
        app.exec()
        idle.timer.stop()

        # 2. The live runs.
        views = window.start_runs()
        probe = LagProbe()
        memory: list[tuple[float, float]] = []
        started = time.monotonic()

        reported = [0]

        def sample_memory() -> None:
            now = time.monotonic() - started
            memory.append((now, rss_mib()))
            if int(now // 60) > reported[0]:
                reported[0] = int(now // 60)
                lat = probe.lateness_ms
                print(f"{now / 60:4.1f} min: lag p99 {percentile(lat, 99):6.2f} ms, RSS {memory[-1][1]:7.1f} MiB, "
                      f"events {sum(v.state.events_seen for v in views)}", file=sys.stderr)

        meter = QTimer()
        meter.setInterval(5_000)
        meter.timeout.connect(sample_memory)
        meter.start()
        sample_memory()
        probe.start()
        QTimer.singleShot(int(args.minutes * 60_000), lambda: app.exit(0))  # exit(): quit() would ask to close
        app.exec()  # the real event loop, as in a user's session
        meter.stop()
        probe.timer.stop()
        sample_memory()
        events = sum(v.state.events_seen for v in views)
        window.leave_runs_and_close()
        window.deleteLater()
        app.processEvents()

    lat = probe.lateness_ms
    after = [(t, m) for t, m in memory if t >= min(WARMUP_S, args.minutes * 30.0)]
    slope = _slope(after)
    figures = {
        "runs": args.runs, "minutes": args.minutes, "events_per_s_per_run": args.rate, "vcpus": args.vcpus,
        "events_delivered": events, "events_per_s": round(events / (args.minutes * 60.0), 1),
        "load_average": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
        "ticks": len(lat), "lag_ms": {"p50": round(percentile(lat, 50), 2), "p99": round(percentile(lat, 99), 2),
                                      "max": round(max(lat), 2)},
        "idle_lag_ms": {"p50": round(percentile(idle.lateness_ms, 50), 2),
                        "p99": round(percentile(idle.lateness_ms, 99), 2), "max": round(max(idle.lateness_ms), 2)},
        "rss_mib": {"after_warmup": round(after[0][1], 1) if after else None, "end": round(memory[-1][1], 1),
                    "max": round(max(m for _t, m in memory), 1),
                    "slope_mib_per_min": round(slope * 60.0, 2) if slope is not None else None},
    }
    if args.json:
        print(json.dumps(figures))
    else:
        hosts = f" of {args.vcpus}-vCPU CPU hosts" if args.vcpus else ""
        print(f"{args.runs} live runs{hosts} x {args.rate:g} events/s + 1 Hz samples for {args.minutes:g} min: "
              f"{events} events delivered ({figures['events_per_s']}/s)")
        print(f"event-loop lag (5 ms timer lateness): p50 {figures['lag_ms']['p50']} ms, "
              f"p99 {figures['lag_ms']['p99']} ms, max {figures['lag_ms']['max']} ms over {len(lat)} ticks "
              f"(target p99 <= 30 ms)")
        print(f"the same window idle, measured first: p50 {figures['idle_lag_ms']['p50']} ms, "
              f"p99 {figures['idle_lag_ms']['p99']} ms, max {figures['idle_lag_ms']['max']} ms "
              f"(this machine's own noise); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
        print(f"RSS: {figures['rss_mib']['after_warmup']} MiB after warm-up -> {figures['rss_mib']['end']} MiB "
              f"at the end (max {figures['rss_mib']['max']}), slope {figures['rss_mib']['slope_mib_per_min']} "
              f"MiB/min")
    return 0 if percentile(lat, 99) <= 30.0 else 1


def _slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares MiB per second through (t, MiB) points."""
    if len(points) < 3:
        return None
    n = len(points)
    mean_t = sum(t for t, _m in points) / n
    mean_m = sum(m for _t, m in points) / n
    var = sum((t - mean_t) ** 2 for t, _m in points)
    return sum((t - mean_t) * (m - mean_m) for t, m in points) / var if var else None


if __name__ == "__main__":
    sys.exit(main())
