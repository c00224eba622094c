"""Which transformers the host's Python has, against the oldest NeuronBench supports (read, never imported).

Every workload that uses transformers (``hf:`` models in train and infer, ``generate``, ``serve --server
transformers``) runs on transformers 4.56 or later, 4.x and 5.x alike.  4.56 is the oldest release the tests
run (4.56.2 in the second test venv, tests/native_venv.py; 5.24.0 in the main one): what came before is
untested, and its ``transformers serve`` (an OpenAI-compatible server since 4.5x) is not the one the serve
workload drives.  The Neuron releases that pin older ones (optimum-neuron before 0.4: 4.51 and older) are
refused too (backends/optimum_neuron.py).  A host with an older one is refused in one sentence naming both
versions, before anything is built or started.
"""
from __future__ import annotations

import sys
from typing import Optional, Tuple

from remote_agent.workloads.problems import SpecProblem

OLDEST = (4, 56)
TESTED = ("4.56.2", "5.24.0")


def version_tuple(text: str) -> Tuple[int, ...]:
    """``"4.56.2"`` -> (4, 56, 2); a pre-release or local tag ends the numbers (``5.0.0rc1`` -> (5, 0))."""
    parts = []
    for piece in text.split("+")[0].split("."):
        digits = ""
        for char in piece:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if digits != piece:
            break
    return tuple(parts)


def installed() -> Optional[str]:
    """transformers' version for this Python from its metadata, or None when it is not installed."""
    from remote_agent.probe.packages import installed_version

    return installed_version("transformers")


def require_transformers(what: str) -> str:
    """The installed transformers version; a SpecProblem when it is absent or older than the oldest supported.

    Args:
        what: what needs it, for the sentence ("hf: models", "transformers serve").
    """
    version = installed()
    if version is None:
        raise SpecProblem("%s need transformers, which is not installed for %s: install it with `neuronbench hosts "
                          "test HOST --install transformers`, or pip install it for that Python"
                          % (what, sys.executable))
    if version_tuple(version)[:2] < OLDEST:
        raise SpecProblem("%s need transformers %d.%d or later, and %s has transformers %s: upgrade it in that Python "
                          "(`python -m pip install -U transformers`; NeuronBench is tested with %s)"
                          % (what, OLDEST[0], OLDEST[1], sys.executable, version, " and ".join(TESTED)))
    return version
