"""The values a run spec's fields may take, and the error naming a field that holds another.

Shared by the agent and the app like ``protocol`` (whose ``RunSpec`` these describe): stdlib only, Python 3.8.
"""
from __future__ import annotations

import math
import re
from typing import Any, Optional

WORKLOADS = ("train", "infer", "generate", "serve")
# serve: how the inference server is had (the user's own command line is --server-cmd, a running one --endpoint).
SERVERS = ("transformers", "vllm")
# The LLM workloads' default shape when none is asked for (prompt tokens in, new tokens out).
DEFAULT_INPUT_LEN = 128
DEFAULT_OUTPUT_LEN = 128
MAX_CONCURRENCY = 4096
# serve: the model when none is named, the tiny random Llama whose config ships (resources/models/).
DEFAULT_SERVE_MODEL = "hf:neuronbench/tiny-random-llama"
BACKENDS = ("auto", "neuron", "xla", "cuda", "cpu")
PRECISIONS = ("fp32", "bf16")
DATA_SOURCES = ("host", "device")
NEURON_STACKS = ("", "native", "xla")  # "": the stack the host has (issue 22)
NEURON_MODES = ("compile", "eager")
MAX_NODES = 1024
DEFAULT_MODEL = "vit_base_patch16_224"
# Telemetry sampling period (seconds): neuron-top's default cadence, and the fastest
# that neuron-monitor and /proc tick counts (100 Hz) still read meaningfully.
TELEMETRY_PERIOD_S = 1.0
TELEMETRY_MIN_PERIOD_S = 0.2
TELEMETRY_MAX_PERIOD_S = 60.0
MAX_SEQ_LEN = 1 << 20
# --target-ci: the fewest steady training steps a stop may rest on (a median of fewer is not one to trust),
# and the loosest target that still means something.
TARGET_CI_MIN_STEPS = 30
# The fewest requests a p99 is read from (one request in a hundred is its whole tail): a --target-ci stop of
# an inference batch size waits for them even when --min-iters asks for fewer.
P99_MIN_REQUESTS = 100
TARGET_CI_MAX_PCT = 50.0
MODEL_ARG_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
# A DNS name, IPv4 or IPv6 address (no spaces, no shell or URL syntax): torchrun's --master_addr.
ADDRESS = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.:%_\-]{0,252}$")
RENDEZVOUS_TIMEOUT_S = 300


class SpecError(ValueError):
    """An invalid run specification; ``field`` names the offending field."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message)
        self.field = field_name


def check_telemetry_period(period: Any, allow_off: bool = False) -> Optional[str]:
    """What is wrong with a sampling period (the end of a sentence), or None if it is usable."""
    if isinstance(period, bool) or not isinstance(period, (int, float)) or not math.isfinite(period):
        return "must be a number of seconds, not %r" % (period,)
    if allow_off and period == 0:
        return None
    if not TELEMETRY_MIN_PERIOD_S <= period <= TELEMETRY_MAX_PERIOD_S:
        return "must be between %g and %g seconds%s, not %g" % (
            TELEMETRY_MIN_PERIOD_S, TELEMETRY_MAX_PERIOD_S, " (or 0: off)" if allow_off else "", period)
    return None
