"""``neuronbench monitor --host HOST [--duration S] [--period S] [--json]``: neuron-top for any host.

The agent's ``monitor`` command samples the host (neuron-monitor, nvidia-smi,
/proc) and streams ``sample`` events (app.services.monitor); this draws the
newest one, redrawn in place on a terminal, or passes them on as JSON Lines
with ``--json``.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from typing import Any, TextIO

from app.cli.hosts_resolve import prompts_for, transport_for
from app.cli.monitor_view import render
from app.core.quoting import SENTENCE_LIMIT, clean
from app.paths import AppPaths
from app.services.monitor import MonitorSession
from remote_agent.protocol import TELEMETRY_MAX_PERIOD_S, TELEMETRY_MIN_PERIOD_S, TELEMETRY_PERIOD_S


def register(commands, common: argparse.ArgumentParser) -> None:
    p = commands.add_parser("monitor", parents=[common],
                            help="live NeuronCore/GPU/CPU utilisation and memory of a host, like neuron-top",
                            description="Watch a host's accelerators, vCPUs and memory (Ctrl-C stops).")
    p.add_argument("--host", required=True, help="host to watch (`local` is this computer)")
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds (default: until Ctrl-C)")
    p.add_argument("--period", type=float, default=TELEMETRY_PERIOD_S, metavar="S",
                   help=f"seconds between samples, {TELEMETRY_MIN_PERIOD_S:g} to {TELEMETRY_MAX_PERIOD_S:g} "
                        f"(default {TELEMETRY_PERIOD_S:g})")
    p.add_argument("--json", action="store_true", help="print the sample events as JSON Lines on stdout")
    p.set_defaults(handler=handle)


def screen_lines(sample: dict[str, Any], host: str, width: int) -> list[str]:
    """The screen's lines for one sample.  Its text (kinds, sources, missing reasons) is the host's: escaped,
    so only this screen's own codes reach the terminal, on every frame and on the last picture left at close."""
    return [clean(line, SENTENCE_LIMIT) for line in render(sample, host, width)]


class Screen:
    """Draws each sample: in place on a terminal (alternate screen, like top), frame after frame elsewhere."""

    def __init__(self, host: str, out: TextIO, width: int | None = None) -> None:
        self.host = host
        self.out = out
        self.width = width  # None: the terminal's, asked at every frame (it may be resized)
        self.tty = bool(getattr(out, "isatty", lambda: False)())
        self.last: dict[str, Any] | None = None
        self._opened = False

    def __call__(self, event: dict[str, Any]) -> None:
        if event["type"] != "sample":
            return
        self.last = event
        lines = screen_lines(event, self.host, self._width())
        if self.tty:
            if not self._opened:
                self.out.write("\033[?1049h\033[?25l")  # alternate screen, cursor hidden
                self._opened = True
            self.out.write("\033[H" + "".join(line + "\033[K\n" for line in lines) + "\033[J")
        else:
            self.out.write("\n".join(lines) + "\n\n")
        self.out.flush()

    def _width(self) -> int:
        return self.width or shutil.get_terminal_size((100, 40)).columns

    def close(self) -> None:
        if self._opened:
            self.out.write("\033[?25h\033[?1049l")
            # Leave the last picture on the normal screen, as a record of where things stood.
            if self.last is not None:
                self.out.write("\n".join(screen_lines(self.last, self.host, self._width())) + "\n")
            self.out.flush()
            self._opened = False


class JsonLines:
    """``--json``: each sample event, as the agent sent it, one per line."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def __call__(self, event: dict[str, Any]) -> None:
        if event["type"] == "sample":
            self.out.write(json.dumps(event, separators=(",", ":"), ensure_ascii=False) + "\n")
            self.out.flush()

    def close(self) -> None:
        """Nothing to restore."""


def handle(args: argparse.Namespace) -> int:
    transport = transport_for(args.host, AppPaths.resolve(args.data_dir), prompts_for(args))
    view = JsonLines(sys.stdout) if args.json else Screen(transport.host, sys.stdout)
    session = MonitorSession(transport, args.period, args.duration, on_event=view)
    try:
        session.run()
    except KeyboardInterrupt:
        session.stop()  # Ctrl-C is how a watch ends
    finally:
        view.close()
        transport.close()
        refused = session.stream.refused if session.stream is not None else None
        if refused is not None and refused.count:  # samples left out of the view: say so, and why
            print(clean(f"neuronbench: warning: {transport.host}: {refused.summary()}", SENTENCE_LIMIT),
                  file=sys.stderr)
    return 0
