"""Find and run the host's command-line tools (neuron-ls, nvidia-smi) safely.

A probe must never hang or crash because a host tool misbehaves, so every run
has a timeout, no stdin, and failures come back as a `ToolError` whose message
is a sentence a user can act on.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import List, Optional, Sequence

# The Neuron packages install their tools here, and a non-login SSH shell often
# lacks it on PATH (aws-neuron-sdk #447), so it is searched after PATH.
NEURON_BIN_DIR = "/opt/aws/neuron/bin"
TIMEOUT_S = 5.0
# Enough of a tool's error output to explain a failure without flooding the event.
_TAIL_CHARS = 400


class ToolError(Exception):
    """A host tool failed, timed out or could not be started; str() is the reason."""


class ToolTimeout(ToolError):
    """The tool did not finish in time: it is likely hung, so don't call it again."""


def find_tool(name: str, extra_dirs: Sequence[str] = ()) -> Optional[str]:
    """Return the path of executable `name` on PATH or in `extra_dirs`, else None."""
    found = shutil.which(name)
    if found:
        return found
    for directory in extra_dirs:
        if os.path.isdir(directory):
            found = shutil.which(name, path=directory)
            if found:
                return found
    return None


def _show(argv: List[str]) -> str:
    """The command as a user would type it (tool name without its directory)."""
    return " ".join([os.path.basename(argv[0])] + list(argv[1:]))


def _tail(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > _TAIL_CHARS:
        text = "..." + text[-_TAIL_CHARS:]
    return text


def run_tool(argv: List[str], timeout: Optional[float] = None) -> str:
    """Run a tool and return its stdout.

    Args:
        argv: the command and its arguments (never passed through a shell).
        timeout: seconds before the tool is killed; `TIMEOUT_S` when None.

    Returns:
        The tool's stdout, decoded as UTF-8 with bad bytes replaced.

    Raises:
        ToolError: the tool could not start or exited non-zero.
        ToolTimeout: the tool exceeded the timeout (it was killed).
    """
    limit = TIMEOUT_S if timeout is None else timeout
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=limit,
                              check=False)
    except subprocess.TimeoutExpired:
        raise ToolTimeout("`%s` did not finish within %g s" % (_show(argv), limit)) from None
    except OSError as exc:
        raise ToolError("`%s` could not be started: %s" % (argv[0], exc)) from None
    out = proc.stdout.decode("utf-8", "replace")
    if proc.returncode != 0:
        # nvidia-smi prints its errors on stdout, most tools on stderr: use whichever has text.
        err = proc.stderr.decode("utf-8", "replace").strip() or out.strip() or "no output"
        raise ToolError("`%s` exited with status %d: %s" % (_show(argv), proc.returncode, _tail(err)))
    return out
