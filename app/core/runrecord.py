"""A run as the store keeps it, and the few facts every view shows about one."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# "interrupted": the instance a run was on went away mid-run (a spot interruption); marked by the app, the
# agent's own end statuses are ok/failed/cancelled/partial ("partial": a sweep kept its finished points).
RUN_STATUSES = ("running", "ok", "partial", "failed", "cancelled", "interrupted", "unfinished")
USABLE = ("ok", "partial")  # statuses whose Result has figures to compare, price and report
# Versions that make two runs' numbers comparable (or not): shown side by side in reports.
FINGERPRINT_KEYS = ("instance_type", "region", "python", "torch", "torch_xla", "torch_neuronx", "neuronx_cc",
                    "neuron_sdk", "timm", "torchvision", "transformers", "cpu", "devices")


def served_model(spec: dict[str, Any], result: dict[str, Any] | None) -> str | None:
    """The model a serve run against a running server (``--endpoint``) or the user's own command measured.

    The spec's ``model`` there is only what the user named, or the form's default when they named none:
    the server says what it serves (``/v1/models``, kept in the Result).  None for every other run.
    """
    if spec.get("workload") != "serve" or not (spec.get("endpoint") or spec.get("server_cmd")):
        return None
    served = (((result or {}).get("serve") or {}).get("server") or {}).get("model")
    return str(served) if served else None


@dataclass
class StoredRun:
    """One row of the run store.  ``result`` is None until the run finished (or for an unfinished run)."""

    run_id: str
    host: str
    status: str
    spec: dict[str, Any]
    created_at: float
    workload: str | None = None
    model: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    updated_at: float | None = None
    env: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    instance_type: str | None = None
    declared: dict[str, Any] | None = None
    event_count: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def finished(self) -> bool:
        return self.status in ("ok", "partial", "failed", "cancelled", "interrupted")


def fingerprint(env: dict[str, Any] | None) -> dict[str, Any]:
    """The versions and hardware that a result depends on, flattened to short strings."""
    env = env or {}
    out: dict[str, Any] = {}
    for key in FINGERPRINT_KEYS:
        value = env.get(key)
        if key == "python" and isinstance(value, dict):
            value = value.get("version")
        elif key == "cpu" and isinstance(value, dict):
            value = f"{value.get('model') or '?'} x{value.get('count') or '?'}"
        elif key == "neuron_sdk" and isinstance(value, dict):
            value = value.get("tools_version") or value.get("runtime_version")
        elif key == "devices":
            value = ", ".join(sorted({_device_label(d) for d in value or []})) or None
        out[key] = value
    return out


def _device_label(device: dict[str, Any]) -> str:
    if device.get("kind") == "neuron":
        return f"{device.get('name') or 'Neuron device'} ({device.get('cores')} NeuronCores)"
    return str(device.get("name") or device.get("kind") or "device")


def fingerprint_differences(envs: dict[str, dict[str, Any] | None]) -> list[str]:
    """Fingerprint keys whose value differs between runs (other than the hardware being compared)."""
    prints = [fingerprint(env) for env in envs.values()]
    if len(prints) < 2:
        return []
    ignore = {"instance_type", "region", "cpu", "devices"}
    return [key for key in FINGERPRINT_KEYS if key not in ignore and len({str(p.get(key)) for p in prints}) > 1]
