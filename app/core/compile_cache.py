"""Was a run's compile cold or served from the Neuron compile cache?  Read from its logged stderr.

The Neuron compiler wrapper logs one line per graph (libneuronxla's
``neuron_cc_wrapper``; both the ``NCC_WRAPPER`` and ``NEURON_CC_WRAPPER`` tags
occur across SDK releases)::

    INFO ||NEURON_CC_WRAPPER||: Call compiler with cmd: ['neuronx-cc', ... MODULE_<id>+<hash>.hlo.pb ...]
    INFO ||NCC_WRAPPER||: Using a cached neff at .../MODULE_<id>+<hash>/model.neff. Exiting with ...

The agent streams stderr as ``log`` events, so the run store holds these lines.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

CACHE_HIT = "Using a cached neff"
COMPILER_CALL = "Call compiler with cmd"
_MODULE = re.compile(r"MODULE_[0-9A-Za-z_]+(?:\+[0-9a-f]+)?")


def cache_state(messages: Iterable[str]) -> dict[str, Any]:
    """``{"hits", "compiled", "state"}``; state is cached / cold / partly cached, or None when no line says."""
    hits: set[str] = set()
    compiled: set[str] = set()
    hit_lines = compiled_lines = 0
    for message in messages:
        if CACHE_HIT in message:
            hit_lines += 1
            hits.update(_MODULE.findall(message))
        elif COMPILER_CALL in message:
            compiled_lines += 1
            compiled.update(_MODULE.findall(message))
    # Count graphs by module id where the lines name one, by line otherwise.
    n_hits = len(hits) or hit_lines
    n_compiled = len(compiled) or compiled_lines
    if n_hits and n_compiled:
        state = "partly cached"
    elif n_hits:
        state = "cached"
    elif n_compiled:
        state = "cold"
    else:
        state = None
    return {"hits": n_hits, "compiled": n_compiled, "state": state}


def cache_state_of_events(events: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """``cache_state`` over a run's ``log`` events."""
    return cache_state(e.get("message", "") for e in events if e.get("type") == "log")
