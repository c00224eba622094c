"""Commands on an SSH host: built from an argument list, every argument quoted.

``remote_command`` is the only place a command line for a host's shell is made.
sshd hands that line to the login shell, so each argument goes through
``shlex.quote``: host names, paths, model names and model arguments are data,
never shell syntax.  Nothing in NeuronBench builds a remote command any other way.
"""
from __future__ import annotations

import shlex
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import paramiko

from app.core.errors import ConnectError


def remote_command(argv: Sequence[str]) -> str:
    """One shell command line that runs ``argv`` exactly (a POSIX login shell is assumed)."""
    if isinstance(argv, str) or not argv:
        raise TypeError("remote_command takes a non-empty list of arguments, not a string")
    for arg in argv:
        if not isinstance(arg, str):
            raise TypeError(f"remote command arguments are text, not {type(arg).__name__}: {arg!r}")
        if "\0" in arg:
            raise ValueError("a remote command argument cannot contain a NUL character")
    return " ".join(shlex.quote(arg) for arg in argv)


@dataclass(frozen=True)
class CommandResult:
    code: int | None  # None: the connection went away before the command's exit status came
    stdout: bytes
    stderr: bytes

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    def stderr_line(self) -> str:
        lines = [line.strip() for line in self.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        return lines[-1] if lines else "it printed nothing on stderr"


def guarded_command(required_file: str, argv: Sequence[str]) -> str:
    """``argv`` run only if ``required_file`` exists (else exit 97), in the login shell itself (no extra sh)."""
    return f"[ -f {shlex.quote(required_file)} ] || exit {EXIT_FILE_MISSING}; exec {remote_command(argv)}"


EXIT_FILE_MISSING = 97


def open_command(transport: paramiko.Transport, argv: Sequence[str], timeout: float = 30.0,
                 require_file: str | None = None) -> paramiko.Channel:
    """Start ``argv`` on the host; the caller reads the channel.  Raises ConnectError if the session fails."""
    command = remote_command(argv) if require_file is None else guarded_command(require_file, argv)
    try:
        channel = transport.open_session(timeout=timeout)
        channel.exec_command(command)
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise ConnectError(f"could not start a command over SSH: {exc}") from None
    return channel


def run_command(transport: paramiko.Transport, argv: Sequence[str], stdin: bytes | None = None,
                timeout: float = 120.0) -> CommandResult:
    """Run ``argv`` to its end and collect its output (for short commands: checks, installs)."""
    channel = open_command(transport, argv)
    channel.settimeout(timeout)
    stderr: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr.append(channel.makefile_stderr("rb").read()),
                              name="ssh-stderr", daemon=True)
    reader.start()
    try:
        if stdin:
            channel.sendall(stdin)
        channel.shutdown_write()
        stdout = channel.makefile("rb").read()
    except TimeoutError:
        channel.close()
        raise ConnectError(f"a command on the host gave no answer within {timeout:g} s: "
                           f"{remote_command(argv)[:200]}") from None
    except (paramiko.SSHException, EOFError, OSError) as exc:
        channel.close()
        raise ConnectError(f"the connection broke while a command ran on the host: {exc}") from None
    channel.status_event.wait(timeout)
    reader.join(timeout=5)
    code = channel.exit_status if channel.exit_status_ready() and channel.exit_status != -1 else None
    channel.close()
    return CommandResult(code, stdout, b"".join(stderr))
