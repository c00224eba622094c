"""Every ``neuronbench …`` command line in README.md and docs/*.md parses with the CLI's own argument parser.

Command lines are taken from fenced code blocks (a line continued with ``\\`` is joined to the next; a
leading ``.venv/bin/`` is allowed; ``# comments`` and whatever follows a pipe or ``&&`` are left out) and
from inline code that starts with ``neuronbench`` and carries an option or an argument beyond the command's
name (``neuronbench report`` in a sentence names a command, it is not an example).  Words in capitals are
placeholders and parse as any value would; ``[--spot]`` marks an optional part, parsed with it.
Nothing is run: only ``build_parser().parse_args``, so an option that was renamed or removed, a misspelt
subcommand or a value the parser refuses fails here, not in a user's terminal.
"""
from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from app.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^(\s*)```")
INLINE = re.compile(r"`(neuronbench [^`]+)`")
PROGRAM = re.compile(r"^(?:\S*/)?neuronbench$")
SHELL_ENDS = {"|", "||", "&&", ";", ">", ">>", "2>", "&"}


def _code_lines(text: str) -> list[tuple[int, str]]:
    """(line number, logical line) of every fenced code block, continuation lines joined."""
    lines, inside, pending, start = [], False, "", 0
    for number, line in enumerate(text.splitlines(), start=1):
        if FENCE.match(line):
            inside, pending = not inside, ""
            continue
        if not inside:
            continue
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        lines.append((start, pending + line))
        pending = ""
    return lines


def _argv(line: str) -> list[str] | None:
    """The arguments after ``neuronbench`` on a shell line, or None when the line runs something else."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return None
    if not words or not PROGRAM.match(words[0]):
        return None
    argv = []
    for word in words[1:]:
        if word in SHELL_ENDS:
            break
        word = word.removeprefix("[").removesuffix("]")
        if word:
            argv.append(word)
    return argv


def _commands() -> list[tuple[str, list[str]]]:
    found = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(REPO).as_posix()
        for number, line in _code_lines(text):
            argv = _argv(line)
            if argv is not None:
                found.append((f"{name}:{number}", argv))
        for match in INLINE.finditer(text):
            argv = _argv(" ".join(match.group(1).split()))
            if argv and (len(argv) > 2 or any(word.startswith("-") for word in argv)):
                number = text.count("\n", 0, match.start()) + 1
                found.append((f"{name}:{number} (inline)", argv))
    return found


COMMANDS = _commands()


def test_the_pages_hold_command_lines_to_check():
    pages = {where.split(":")[0] for where, _ in COMMANDS}
    assert "README.md" in pages and "docs/hosts.md" in pages
    assert len(COMMANDS) >= 45
    # A line continued with a backslash is one command (docs/ec2.md's hosts add).
    assert any(argv[:2] == ["hosts", "add"] and "--ec2" in argv and "--max-minutes" in argv for _, argv in COMMANDS)


@pytest.mark.parametrize("argv", [argv for _, argv in COMMANDS], ids=[where for where, _ in COMMANDS])
def test_every_documented_command_line_parses(argv):
    parser = build_parser()
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            args = parser.parse_args(argv)
    except SystemExit as exit_:
        pytest.fail(f"neuronbench {shlex.join(argv)}: the parser refused it (exit {exit_.code}): "
                    f"{errors.getvalue().strip()}")
    assert getattr(args, "handler", None), f"neuronbench {shlex.join(argv)} names no command"


def test_a_stale_option_would_be_caught():
    parser = build_parser()
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        parser.parse_args(["run", "--host", "local", "--no-such-option"])
