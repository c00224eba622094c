"""Probe a host: Python and ML package versions, CPU, memory, Neuron and NVIDIA devices,
EC2 instance type and region, Neuron SDK and venvs, compile cache, pre-flight warnings.

Stdlib only and Python 3.8+: the probe must work on a bare host, so torch and the
Neuron packages are never imported here, only their installed metadata is read.
The one entry point is `collect_env`.
"""
from __future__ import annotations

from remote_agent.probe.env import collect_env

__all__ = ["collect_env"]
