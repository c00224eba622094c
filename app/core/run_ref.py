"""A run named by the user (``runs show/attach/cancel/set``, compare, report): a whole id or a long enough prefix.

A script's ``neuronbench runs cancel "$ID"`` with an empty variable must not cancel the one run the
store holds: an empty or blank reference is refused, and so is a prefix too short to mean something
(fewer characters than a run id's date).  A whole id of any length is always taken as it is.
"""
from __future__ import annotations

import re

from app.core.errors import BadSpecError
from app.core.quoting import has_surrogates, quoted

MIN_PREFIX = 8      # "20261124": a day's runs; shorter prefixes act on runs the user never meant
MAX_RUN_ID = 80     # remote_agent.protocol.RUN_ID_PATTERN: no run id is longer
_RUN_ID_CHARS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


def check_run_ref(ref: str) -> str:
    """``ref`` without surrounding blanks, or BadSpecError saying why it cannot name a run."""
    if has_surrogates(ref):
        raise BadSpecError(f"run id {quoted(ref)} is not valid text (bytes that are not UTF-8): copy it from "
                           f"`neuronbench runs list`")
    text = ref.strip()
    if not text:
        raise BadSpecError("give a run id (or its first characters): the run id given is empty; "
                           "`neuronbench runs list` shows them")
    if len(text) > MAX_RUN_ID or not _RUN_ID_CHARS.match(text):
        raise BadSpecError(f"{quoted(text, 60)} is not a run id (letters, digits, _ . - only, at most {MAX_RUN_ID} "
                           f"characters): `neuronbench runs list` shows them")
    return text


def prefix_too_short(text: str) -> BadSpecError:
    """The sentence for a prefix that names no run exactly and is too short to pick one."""
    return BadSpecError(f"{quoted(text)} is not a run id, and a run id prefix needs at least {MIN_PREFIX} characters "
                        f"(e.g. 20261124-1530): `neuronbench runs list` shows the ids")
