"""What an EC2 benchmark costs: the estimate shown before launching, and the bill after.

* **Before**: a rough allowance of how long the run takes on a fresh instance
  (boot and deploy, compile, the work), which sets the dead-man switch (estimate
  x 2 + 15 min) -- and that switch is what bounds the price: an instance cannot
  live longer, so "at most" is ``max_minutes x price``.
* **After**: launch to terminate x the hourly price, compile and boot included:
  what the benchmark itself cost.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from app.core.cost import SECONDS_PER_HOUR, usd_for_seconds
from app.core.ec2_launch import Ec2Launch, family_kind

# The allowance per phase.  Rough on purpose: it sizes a safety timer, and the timer is doubled.
BOOT_AND_DEPLOY_S = 6 * 60          # pending -> running -> SSH -> agent uploaded
COMPILE_S = {"neuron": 10 * 60, "gpu": 2 * 60, "cpu": 60}  # per compiled graph (a batch size)
ASSUMED_STEP_S = 1.0                # a training step before any was measured
INFER_SETUP_S = 30                  # each batch size runs in a fresh process
SAFETY_FACTOR = 2
SAFETY_MARGIN_MIN = 15


def estimate_run_seconds(spec: dict[str, Any], instance_type: str, repeats: int = 1) -> float:
    """Seconds from launch until the last repeat ends, as a generous allowance (not a prediction)."""
    kind = family_kind(instance_type)
    sizes = list(spec.get("batch_sizes") or [1])
    if spec.get("workload") == "train":
        one = COMPILE_S[kind] + int(spec.get("steps") or 100) * ASSUMED_STEP_S
    else:
        per_size = max(float(spec.get("duration") or 5.0), int(spec.get("min_iters") or 100) * 0.05)
        one = len(sizes) * (COMPILE_S[kind] + INFER_SETUP_S + per_size)
    return BOOT_AND_DEPLOY_S + max(1, repeats) * one


def default_max_minutes(estimate_s: float) -> int:
    """The dead-man switch when none is given: the estimate x 2 + 15 min, in whole minutes."""
    return int(math.ceil(estimate_s / 60.0 * SAFETY_FACTOR + SAFETY_MARGIN_MIN))


def usd_so_far(launched_at: float, now: float, usd_per_hour: float | None) -> float | None:
    """What an instance launched at ``launched_at`` (unix seconds) has cost by ``now``."""
    return usd_for_seconds(max(0.0, now - launched_at), usd_per_hour)


def format_usd(usd: float | None) -> str:
    """$4.10, $0.67, $0.0123 for sums under a dime, N/A when unknown."""
    if usd is None:
        return "N/A"
    return f"${usd:,.2f}" if usd >= 0.1 or usd == 0 else f"${usd:.4f}"


def format_minutes(seconds: float) -> str:
    minutes = seconds / 60.0
    if minutes < 60:
        return f"{minutes:.0f} min" if minutes >= 1 else f"{seconds:.0f} s"
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"


@dataclass(frozen=True)
class LaunchPlan:
    """One instance to launch: what it is, its price and how long it may live."""

    host: str
    instance_type: str
    region: str
    market: str
    usd_per_hour: float | None
    estimate_s: float
    max_minutes: int

    @property
    def expected_usd(self) -> float | None:
        return usd_for_seconds(self.estimate_s, self.usd_per_hour)

    @property
    def at_most_usd(self) -> float | None:
        """The dead-man switch bounds the bill: the instance cannot outlive ``max_minutes``."""
        return usd_for_seconds(self.max_minutes * 60.0, self.usd_per_hour)


def plan_launch(host: str, launch: Ec2Launch, spec: dict[str, Any], repeats: int,
                usd_per_hour: float | None) -> LaunchPlan:
    """What launching for this run means: the estimate, the dead-man switch, the price (None: unknown)."""
    estimate = estimate_run_seconds(spec, launch.instance_type, repeats)
    return LaunchPlan(host, launch.instance_type, launch.region, launch.market, usd_per_hour, estimate,
                      launch.max_minutes or default_max_minutes(estimate))


def confirmation_sentence(plans: Sequence[LaunchPlan]) -> str:
    """"3 instances, about $4.10 at most (expected $1.20) ..." -- asked before anything is launched."""
    count = f"{len(plans)} instance" + ("s" if len(plans) != 1 else "")
    bounds = [p.at_most_usd for p in plans]
    unpriced = [p for p in plans if p.usd_per_hour is None]
    if unpriced:
        names = ", ".join(f"{p.instance_type} ({p.host})" for p in unpriced)
        priced = sum(b for b in bounds if b is not None)
        head = f"{count}, price unknown for {names}" + (f"; the others about {format_usd(priced)} at most"
                                                         if len(unpriced) < len(plans) else "")
    else:
        expected = sum(p.expected_usd or 0.0 for p in plans)
        head = f"{count}, about {format_usd(sum(b or 0.0 for b in bounds))} at most " \
               f"(expected about {format_usd(expected)})"
    details = "; ".join(
        f"{p.host}: {p.instance_type} {'spot' if p.market == 'spot' else 'on-demand'} in {p.region}, "
        f"{format_usd(p.usd_per_hour)}/h, terminated after the run or at the latest {p.max_minutes} min after boot"
        for p in plans)
    return f"{head} -- {details}"


def hours(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / SECONDS_PER_HOUR
