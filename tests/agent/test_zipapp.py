"""The real agent zipapp: content-addressed, and probing works with nothing but the stdlib."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile

import pytest

from app.services.agent_bundle import build_archive, ensure_bundle
from remote_agent.protocol import iter_events


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return ensure_bundle(tmp_path_factory.mktemp("agent"))


def test_the_bundle_is_named_by_its_content_hash(bundle, tmp_path):
    assert bundle.sha256[:16] in bundle.name and bundle.name.endswith(".pyz")
    assert build_archive() == build_archive()  # deterministic: same sources, same bytes
    again = ensure_bundle(tmp_path)
    assert again.sha256 == bundle.sha256 and again.name == bundle.name


def test_the_bundle_holds_the_agent_sources_and_its_data_only(bundle):
    archive = zipfile.ZipFile(bundle.path)
    names = archive.namelist()
    assert "__main__.py" in names and "remote_agent/protocol.py" in names
    assert all(n == "__main__.py" or n.startswith("remote_agent/") for n in names)
    assert not any("__pycache__" in n for n in names)
    # The one data file: neuron-monitor's config template, read with pkgutil inside the zipapp.
    assert [n for n in names if not n.endswith(".py")] == ["remote_agent/monitor/neuron-monitor.json"]
    config = json.loads(archive.read("remote_agent/monitor/neuron-monitor.json"))
    assert [m["type"] for m in config["system_metrics"]] == ["vcpu_usage", "memory_info", "neuron_hw_counters"]


def _probe(python_args, bundle):
    proc = subprocess.run([sys.executable, *python_args, str(bundle.path), "probe", "--quick"],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()
    events = list(iter_events(proc.stdout.splitlines()))
    assert [e["type"] for e in events] == ["hello", "probe", "end"]
    return events


def test_probe_on_a_bare_python_reports_torch_missing_as_data(bundle):
    # -S: no site-packages, so only the standard library is importable (a fresh EC2 host's python3).
    # -I: ignore PYTHON* variables and the user site as well.
    events = _probe(["-S", "-I"], bundle)
    hello, probe, _ = events
    assert hello["protocol_version"] == 1 and hello["python"] == sys.version.split()[0]
    env = probe["env"]
    assert env["torch"] is None and "torch" in env["missing"]
    assert env["timm"] is None and env["cpu"]["count"] >= 1


def test_probe_with_the_project_python_finds_the_pinned_torch(bundle):
    env = _probe([], bundle)[1]["env"]
    assert env["torch"].startswith("2.9.0") and env["torch_xla"].startswith("2.9.0")
    assert json.dumps(env)  # plain JSON all the way down
