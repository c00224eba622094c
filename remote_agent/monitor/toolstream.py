"""A host tool that streams one record per line (neuron-monitor, ``nvidia-smi -lms``), run for the sampler."""
from __future__ import annotations

import os
import subprocess
import threading
from collections import deque
from typing import Callable, List, Optional

from remote_agent.launch import agent_command, child_env
from remote_agent.orphan import ENV_PARENT_PID

STOP_GRACE_S = 3.0


class ToolStream:
    """Starts ``argv``, hands each stdout line to ``on_line`` on a reader thread, keeps a tail of its messages.

    ``on_line`` returns whether the line was a record; other lines (nvidia-smi
    prints its errors on stdout) join the stderr lines in the tail that explains
    a failure.

    The tool is started through the agent's ``_exec`` so that it dies with this
    process (PR_SET_PDEATHSIG) and never outlives a killed supervisor.  That signal
    fires when the *thread* that started the child ends: call ``start`` from a
    thread that lives as long as the process (the main thread).
    """

    def __init__(self, tool: str, argv: List[str], on_line: Callable[[bytes], bool]) -> None:
        self.tool = tool
        self.argv = argv
        self.on_line = on_line
        self.proc = None  # type: Optional[subprocess.Popen]
        self._messages = deque(maxlen=5)  # type: deque
        self._threads = []  # type: List[threading.Thread]

    def start(self) -> None:
        env = child_env()
        env[ENV_PARENT_PID] = str(os.getpid())
        self.proc = subprocess.Popen(agent_command() + ["_exec", "--"] + self.argv, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        for target, name in ((self._pump_stdout, "stdout"), (self._pump_stderr, "stderr")):
            thread = threading.Thread(target=target, name="%s-%s" % (self.tool, name), daemon=True)
            thread.start()
            self._threads.append(thread)

    def _pump_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in iter(self.proc.stdout.readline, b""):
            if line.strip() and not self.on_line(line):
                self._messages.append(line.decode("utf-8", "replace").strip()[:300])

    def _pump_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for raw in iter(self.proc.stderr.readline, b""):
            text = raw.decode("utf-8", "replace").strip()
            if text:
                self._messages.append(text[:300])

    def pids(self) -> List[int]:
        return [self.proc.pid] if self.proc is not None else []

    def exit_reason(self) -> Optional[str]:
        """Why the tool stopped (its status and last stderr lines), or None while it runs."""
        if self.proc is None or self.proc.poll() is None:
            return None
        for thread in self._threads:
            thread.join(timeout=1.0)
        said = " / ".join(self._messages)
        return "%s exited with status %s%s" % (self.tool, self.proc.returncode,
                                               ": " + said if said else " and printed no message")

    def stop(self) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for thread in self._threads:
            thread.join(timeout=2.0)
