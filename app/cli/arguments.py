"""Command-line text NeuronBench cannot keep or echo as it came: arguments that are not UTF-8, argparse's errors.

A shell passes a byte that is not UTF-8 to Python as a lone surrogate (``\\udcff``).  Kept, it would
crash later and far away -- in paramiko sending a user name, in SQLite storing a run or a model
argument -- so it is refused here, in one sentence, before anything is stored.  Paths on this
computer are the exception: the operating system takes their bytes back as they were.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from app.core.quoting import SENTENCE_LIMIT, clean, has_surrogates, quoted

# Files on this computer only: never stored in a profile, sent to a host or written into the run store.
LOCAL_PATH_OPTIONS = frozenset(("--data-dir", "--output", "--events", "--config"))


class Parser(argparse.ArgumentParser):
    """argparse, with its error sentences (which quote what was typed) escaped and shortened."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {clean(message, SENTENCE_LIMIT)}\n")


def undecodable_argument(argv: Sequence[str]) -> str | None:
    """The sentence for the first argument that is not UTF-8 text (None when every one is)."""
    for index, arg in enumerate(argv):
        if not has_surrogates(arg):
            continue
        if arg.startswith("--") and "=" in arg:
            flag: str | None = arg.split("=", 1)[0]
        elif index and argv[index - 1].startswith("-") and not has_surrogates(argv[index - 1]):
            flag = argv[index - 1]
        else:
            flag = None
        if flag in LOCAL_PATH_OPTIONS:
            continue
        what = f"the value of {flag}" if flag else f"argument {index + 1}"
        return (f"{what} is not valid text: {quoted(arg, 60)} holds bytes that are not UTF-8 (as a shell passes "
                f"them); names, users, Pythons, run ids and model arguments must be UTF-8")
    return None
