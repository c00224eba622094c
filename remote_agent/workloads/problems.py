"""The exception every model source raises for a spec that cannot run as written."""
from __future__ import annotations


class SpecProblem(Exception):
    """The spec cannot run as written (unknown model, bad model argument, a file that breaks the contract).

    Its message is the one sentence the user reads: say what is wrong and what to do.
    """
