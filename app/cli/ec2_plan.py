"""Before `run` launches anything: what each instance may cost, and the user's yes.

The dead-man switch of each instance (its --max-minutes, else the run's
estimate x 2 + 15 min) bounds what it can cost, so the question names a ceiling,
not a guess: "3 instances, about $4.10 at most".  Scripts answer with --yes.
"""
from __future__ import annotations

import argparse
import sys

from app.cli.prompts import ask_yes_no, interactive
from app.core.ec2_cost import LaunchPlan, confirmation_sentence, plan_launch
from app.core.errors import BadSpecError, NeuronBenchError
from app.core.hosts import HostProfile
from app.core.pricebook import PriceBook
from app.services.ec2.lease import Ec2RunOptions
from remote_agent.protocol import RunSpec


def launch_plans(profiles: list[HostProfile], spec: RunSpec, repeats: int, book: PriceBook | None) -> list[LaunchPlan]:
    """One plan per --ec2 host: its price, the run's estimate and the dead-man switch."""
    return [plan_launch(p.name, p.ec2, spec.to_dict(), repeats,
                        book.price(p.ec2.instance_type, p.ec2.region, p.ec2.market).usd_per_hour if book else None)
            for p in profiles if p.ec2 is not None]


def confirm_launches(plans: list[LaunchPlan], yes: bool) -> None:
    """Say what will be launched and what it may cost; go on only with --yes or the user's yes."""
    if not plans:
        return
    sentence = confirmation_sentence(plans)
    print(f"neuronbench: launching {sentence}", file=sys.stderr)
    if yes:
        return
    if not interactive():
        raise BadSpecError("nothing launched: EC2 instances cost money, so `run` asks first; pass --yes to launch "
                           "without asking")
    if not ask_yes_no("Launch? [y/N] "):
        raise NeuronBenchError("nothing launched")


def ec2_options(args: argparse.Namespace, plans: list[LaunchPlan]) -> dict[str, Ec2RunOptions]:
    return {plan.host: Ec2RunOptions(max_minutes=plan.max_minutes, keep=bool(getattr(args, "keep", False)))
            for plan in plans}
