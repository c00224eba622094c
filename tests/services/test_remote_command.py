"""Remote command lines: whatever the arguments hold, a shell sees data, never syntax.

sshd runs the command line it receives with the login shell's ``-c``; these tests
do exactly that with the shells a host is likely to have, on this machine.
"""
from __future__ import annotations

import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.services.remote_exec import remote_command

SHELLS = sorted({shutil.which(s) for s in ("sh", "bash", "dash", "zsh") if shutil.which(s)})
# printf (a shell builtin, so the test stays fast) prints each argument it received, NUL-terminated.
ECHO_ARGV = ["printf", "%s\\0"]


def hostile_text(marker: str):
    """Strings made of shell syntax, and ready-made attempts to run ``touch MARKER``."""
    attempts = st.sampled_from([
        f"; touch {marker}", f"$(touch {marker})", f"`touch {marker}`", f"| touch {marker}",
        f"&& touch {marker}", f"'; touch {marker}; '", f"\"; touch {marker}; \"", f"\ntouch {marker}\n",
        f"$'\\x3b' touch {marker}", f"${{IFS}}touch${{IFS}}{marker}", f"> {marker}", "-rf /", "~root", "*",
    ])
    syntax = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"), max_size=40)
    return st.one_of(attempts, syntax, st.lists(st.one_of(attempts, syntax), max_size=3).map("".join))


@pytest.mark.parametrize("shell", SHELLS)
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_argument_reaches_the_program_exactly_and_nothing_runs(shell, tmp_path, data):
    marker = tmp_path / "marker"
    args = data.draw(st.lists(hostile_text(str(marker)), min_size=1, max_size=4))
    line = remote_command([*ECHO_ARGV, *args])
    out = subprocess.run([shell, "-c", line], capture_output=True, cwd=tmp_path, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode("utf-8").split("\0")[:-1] == args
    assert not marker.exists()


def test_a_command_is_a_list_not_a_string():
    with pytest.raises(TypeError):
        remote_command("rm -rf /")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="NUL"):
        remote_command(["echo", "a\0b"])
