"""The agent's probe (`remote_agent.probe.collect_env`) against real processes.

The host's tools are the executables in tests/doubles/bin (replaying the recorded
formats in tests/data/neuron), IMDS is a real HTTP server on 127.0.0.1, and Neuron
venvs are real directory layouts in tmp_path.  Nothing in the product is mocked;
the tests only choose what the "host" looks like through PATH and environment.
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from imds_server import TOKEN, ImdsServer, SilentServer, closed_port_url

from remote_agent.probe import collect_env, commands, imds, preflight, sdk_packages

ROOT = Path(__file__).resolve().parents[2]
DOUBLES = ROOT / "tests" / "doubles" / "bin"
NEURON_DATA = ROOT / "tests" / "data" / "neuron"
GIB = 1024 ** 3
A10G_BYTES = 23028 * 1024 * 1024
ENV_KEYS = {
    "hostname", "os", "python", "torch", "torchvision", "timm", "transformers", "torch_xla", "torch_neuronx",
    "neuronx_cc", "cpu", "mem_bytes", "devices", "neuron_cores", "gpus", "instance_type", "region",
    "neuron_sdk", "neuron_venvs", "neuron_stack", "neuron_stack_detail", "compile_cache", "warnings", "missing",
}
INF2_DEVICE = {
    "kind": "neuron", "index": 0, "cores": 2, "core_ids": [0, 1], "memory_bytes": 32 * GIB,
    "bdf": "0000:00:1e.0", "lnc": None,
    "processes": [{"pid": 5120, "command": "python3 serve_vit.py --model vit_base...",
                   "runtime_version": "2.34.10"}],
}
INF2_BUSY_WARNING = (
    "NeuronCores 0-1 on Neuron device 0 are in use by pid 5120 (python3 serve_vit.py --model "
    "vit_base...): a run on them fails with NERR_RESOURCE_NC; stop that process first (no NeuronCore "
    "is free to pin with NEURON_RT_VISIBLE_CORES)."
)


def sdk_232_warning(venv_glob: str) -> str:
    return (
        f"Neuron devices are present but torch-neuronx is installed neither for {sys.executable} nor in "
        f"any Neuron venv ({venv_glob}): on Trn2/Trn3 use the Neuron SDK 2.33 DLAMI's TorchNeuron venv "
        "(/opt/aws_neuronx_venv_torch_neuronx_2_14_0), on Inf2/Trn1 a DLAMI or venv from SDK 2.31 or earlier "
        "(torch-neuronx 2.9 + torch-xla 2.9), or install torch-neuronx."
    )


@pytest.fixture(autouse=True)
def bare_host(monkeypatch, tmp_path):
    """Every test starts on a host with no tools, no venvs, no dpkg Neuron packages, not on EC2.

    That keeps the results independent of the machine running the tests, and makes sure
    no test can reach the real metadata address.
    """
    empty_bin = tmp_path / "empty-bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))
    monkeypatch.setattr(commands, "NEURON_BIN_DIR", str(tmp_path / "no-neuron-bin"))
    monkeypatch.setattr(sdk_packages, "DPKG_STATUS", str(tmp_path / "no-dpkg-status"))
    dmi = tmp_path / "sys" / "devices" / "virtual" / "dmi" / "id"
    dmi.mkdir(parents=True)
    (dmi / "sys_vendor").write_text("QEMU\n")
    monkeypatch.setenv("NEURONBENCH_SYSFS_ROOT", str(tmp_path / "sys"))
    monkeypatch.setenv("NEURONBENCH_NEURON_VENV_GLOB", str(tmp_path / "no-venvs" / "venv_*"))
    monkeypatch.setenv("NEURON_COMPILE_CACHE_URL", str(tmp_path / "cache"))
    monkeypatch.setenv("NEURONBENCH_MIN_CACHE_FREE_BYTES", "1")
    for name in ("NEURONBENCH_IMDS_ENDPOINT", "NEURONBENCH_FAKE_NEURON_LS", "NEURONBENCH_FAKE_NEURON_LS_MODE",
                 "NEURONBENCH_FAKE_NVIDIA_SMI", "NEURONBENCH_FAKE_NVIDIA_SMI_MODE",
                 "NEURONBENCH_FAKE_NVIDIA_SMI_COUNT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def host_tools(monkeypatch, tmp_path):
    """Put the named doubles (and a python3 for their shebang) alone on PATH."""

    def install(*names: str) -> Path:
        bindir = tmp_path / "host-bin"
        bindir.mkdir(exist_ok=True)
        if not (bindir / "python3").exists():
            (bindir / "python3").symlink_to(sys.executable)
        for name in names:
            (bindir / name).symlink_to(DOUBLES / name)
        monkeypatch.setenv("PATH", str(bindir))
        return bindir

    return install


def make_venv(root: Path, name: str, dists: dict[str, str], py: str = "python3.10") -> Path:
    """A venv layout as the DLAMI has it: bin/python3 and lib/pythonX.Y/site-packages/*.dist-info."""
    venv = root / name
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python3"
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    site = venv / "lib" / py / "site-packages"
    site.mkdir(parents=True)
    for dist, version in dists.items():
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    return venv


def assert_json_round_trip(env: dict) -> None:
    assert set(env) == ENV_KEYS
    assert json.loads(json.dumps(env, allow_nan=False)) == env


# --------------------------------------------------------------------------- plain machine


def test_plain_machine_reports_what_is_missing_and_why():
    env = collect_env()

    assert_json_round_trip(env)
    assert env["python"] == {"version": ".".join(map(str, sys.version_info[:3])), "executable": sys.executable,
                             "implementation": "CPython"}
    # The test venv has the pinned stack; torch carries its local (CUDA) tag from torch/version.py.
    assert env["torch"].split("+")[0] == "2.9.0"
    assert env["torchvision"].split("+")[0] == "0.24.0"
    assert env["timm"] == "1.0.31"
    assert env["transformers"] == "5.24.0"  # beside torch, torchvision and timm: hf: models need it
    assert env["torch_xla"] == "2.9.0"
    assert env["torch_neuronx"] is None and env["neuronx_cc"] is None
    assert env["missing"]["torch_neuronx"] == f"not installed for {sys.executable}"
    assert env["missing"]["neuronx_cc"] == f"not installed for {sys.executable}"
    assert "torch" not in env["missing"]

    assert env["devices"] == [] and env["neuron_cores"] == 0 and env["gpus"] == 0
    assert env["missing"]["devices.neuron"] == (
        f"neuron-ls not found on PATH or in {commands.NEURON_BIN_DIR}")
    assert env["missing"]["devices.gpu"] == "nvidia-smi not found on PATH (no NVIDIA driver installed)"
    assert env["neuron_sdk"] is None and env["missing"]["neuron_sdk"].startswith("neuron-ls not found")
    assert env["neuron_venvs"] == []
    pattern = os.environ["NEURONBENCH_NEURON_VENV_GLOB"]
    assert env["missing"]["neuron_venvs"] == f"no Neuron venv matches {pattern}"
    assert env["instance_type"] is None and env["region"] is None
    assert env["missing"]["instance_type"] == "not an EC2 instance (DMI vendor is 'QEMU', not Amazon EC2)"
    assert env["warnings"] == []

    assert env["cpu"]["count"] == os.cpu_count()
    assert env["cpu"]["usable"] == len(os.sched_getaffinity(0))
    with open("/proc/meminfo") as handle:
        kib = int(next(line for line in handle if line.startswith("MemTotal:")).split()[1])
    assert env["mem_bytes"] == kib * 1024
    with open("/proc/cpuinfo") as handle:
        names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
    assert env["cpu"]["model"] == (names[0] if names else None)


def test_imds_is_not_contacted_off_ec2(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError(f"the probe opened a network connection: {args!r}")

    def no_client(*args, **kwargs):
        raise AssertionError("the probe started an IMDS client (and its 1 s budget) off EC2")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(imds, "_Client", no_client)  # nothing of the budget is spent: no request is even built
    env = collect_env()
    assert env["instance_type"] is None and env["region"] is None
    assert env["missing"]["region"].startswith("not an EC2 instance")


@pytest.mark.parametrize(("relpath", "text", "expected"), [
    ("devices/virtual/dmi/id/sys_vendor", "Amazon EC2\n", (True, "DMI vendor is Amazon EC2")),
    ("devices/virtual/dmi/id/board_asset_tag", "i-0123456789abcdef0\n", (True, "DMI asset tag is an instance id")),
    ("hypervisor/uuid", "ec2e1916-9099-7caf-fd21-012345abcdef\n", (True, "Xen hypervisor uuid starts with ec2")),
    ("devices/virtual/dmi/id/sys_vendor", "Dell Inc.\n", (False, "DMI vendor is 'Dell Inc.', not Amazon EC2")),
])
def test_ec2_detection_reads_dmi_and_hypervisor(tmp_path, relpath, text, expected):
    path = tmp_path / relpath
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert imds.looks_like_ec2(str(tmp_path)) == expected
    assert imds.looks_like_ec2(str(tmp_path / "nothing")) == (False, "DMI vendor is not Amazon EC2")


# --------------------------------------------------------------------------- neuron-ls


def test_inf2_device_busy_core_and_sdk_warnings(host_tools):
    host_tools("neuron-ls")
    env = collect_env()

    assert_json_round_trip(env)
    assert env["devices"] == [INF2_DEVICE]
    assert env["neuron_cores"] == 2 and env["gpus"] == 0
    assert env["neuron_sdk"] == {"tools_version": "2.26.26.0", "runtime_version": "2.34.10"}
    assert "devices.neuron" not in env["missing"] and "neuron_sdk" not in env["missing"]
    assert env["warnings"] == [INF2_BUSY_WARNING,
                               sdk_232_warning(os.environ["NEURONBENCH_NEURON_VENV_GLOB"])]


def test_trn1_32xlarge_sixteen_devices_one_summary_warning(host_tools, monkeypatch):
    host_tools("neuron-ls")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS", "neuron-ls-trn1-32xlarge.json")
    env = collect_env(quick=True)

    assert len(env["devices"]) == 16 and env["neuron_cores"] == 32
    assert [d["index"] for d in env["devices"]] == list(range(16))
    assert env["devices"][15] == {
        "kind": "neuron", "index": 15, "cores": 2, "core_ids": [30, 31], "memory_bytes": 32 * GIB,
        "bdf": "0000:00:13.0", "lnc": None,
        "processes": [{"pid": 7331, "command": "python3 -u train_vit.py --model vit_b...",
                       "runtime_version": "2.34.10"},
                      {"pid": 7332, "command": "python3 -u train_vit.py --model vit_b...",
                       "runtime_version": "2.34.10"}],
    }
    assert env["devices"][6]["bdf"] == "0000:00:0a.0"
    busy = [w for w in env["warnings"] if "NERR_RESOURCE_NC" in w]
    assert busy == [
        "NeuronCores 0-31 on 16 Neuron devices (0-15) are in use by 32 processes, pids 7301, 7302, 7303, "
        "7304, 7305, 7306, and 26 more (python3 -u train_vit.py --model vit_b...): a run on them fails "
        "with NERR_RESOURCE_NC; stop those processes first (no NeuronCore is free to pin with "
        "NEURON_RT_VISIBLE_CORES)."
    ]


def test_free_cores_are_suggested_for_neuron_rt_visible_cores(host_tools, monkeypatch, tmp_path):
    devices = json.loads((NEURON_DATA / "neuron-ls-trn1-32xlarge.json").read_text())
    for device in devices[1:]:
        device["neuron_processes"] = []
    fixture = tmp_path / "one-busy.json"
    fixture.write_text(json.dumps(devices))
    host_tools("neuron-ls")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS", str(fixture))
    env = collect_env(quick=True)

    assert env["warnings"][0] == (
        "NeuronCores 0-1 on Neuron device 0 are in use by pids 7301, 7302 (python3 -u train_vit.py "
        "--model vit_b...): a run on them fails with NERR_RESOURCE_NC; stop those processes or pin free "
        "cores with NEURON_RT_VISIBLE_CORES=2-31.")


def test_trn2_style_output_short_bdf_unknown_keys_and_instance_type(host_tools, monkeypatch, tmp_path):
    # Shaped after the docs' trn2 example (bdf without domain, LNC=2) plus the per-device
    # instance keys seen in Neuron 2.32-era captures, and an idle device (no processes).
    fixture = tmp_path / "trn2.json"
    fixture.write_text(json.dumps([{
        "instance_type": "trn2.48xlarge", "instance_id": "i-0123456789abcdef0",
        "neuron_device": 0, "bdf": "cc:00.0", "cpu_affinity": "48-95,144-191", "numa_node": "1",
        "connected_to": [12, 3, 4, 1], "nc_count": 4, "logical_neuroncore_config": 2,
        "memory_size": 103079215104, "neuroncore_ids": [0, 1, 2, 3], "neuron_processes": [],
        "something_new": {"nested": True},
    }]))
    host_tools("neuron-ls")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS", str(fixture))
    env = collect_env(quick=True)

    assert env["devices"] == [{"kind": "neuron", "index": 0, "cores": 4, "core_ids": [0, 1, 2, 3],
                               "memory_bytes": 103079215104, "bdf": "0000:cc:00.0", "processes": [], "lnc": 2}]
    assert env["neuron_cores"] == 4
    # IMDS was skipped (quick), so neuron-ls's own instance type fills in.
    assert env["instance_type"] == "trn2.48xlarge" and "instance_type" not in env["missing"]
    assert env["region"] is None and env["missing"]["region"] == "not looked up (quick probe)"
    # Idle: no process reports a runtime version, and this host has no dpkg database.
    assert env["neuron_sdk"] == {"tools_version": "2.26.26.0", "runtime_version": None}
    assert "aws-neuronx-runtime-lib" in env["missing"]["neuron_sdk.runtime_version"]
    assert not [w for w in env["warnings"] if "NERR_RESOURCE_NC" in w]


def test_idle_runtime_version_comes_from_dpkg(host_tools, monkeypatch, tmp_path):
    status = tmp_path / "status"
    status.write_text(
        "Package: aws-neuronx-tools\nStatus: install ok installed\nVersion: 2.26.26.0-f6e8c3b94\n\n"
        "Package: aws-neuronx-runtime-lib\nStatus: install ok installed\nArchitecture: amd64\n"
        "Description: Neuron runtime\n multi-line description\nVersion: 2.29.40.0-f954cd7a5\n\n"
        "Package: aws-neuronx-collectives\nStatus: deinstall ok config-files\nVersion: 2.0-x\n")
    monkeypatch.setattr(sdk_packages, "DPKG_STATUS", str(status))
    assert sdk_packages.dpkg_version("aws-neuronx-runtime-lib") == "2.29.40.0"
    assert sdk_packages.dpkg_version("aws-neuronx-collectives") is None
    assert sdk_packages.dpkg_version("not-there") is None

    idle = json.loads((NEURON_DATA / "neuron-ls-inf2-xlarge.json").read_text())
    idle[0]["neuron_processes"] = []
    fixture = tmp_path / "idle.json"
    fixture.write_text(json.dumps(idle))
    host_tools("neuron-ls")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS", str(fixture))
    env = collect_env(quick=True)
    assert env["neuron_sdk"] == {"tools_version": "2.26.26.0", "runtime_version": "2.29.40.0"}
    assert "neuron_sdk.runtime_version" not in env["missing"]


def test_neuron_2_34_output_format_json_fallback(host_tools, monkeypatch):
    host_tools("neuron-ls")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS_MODE", "sdk-2.34")
    env = collect_env(quick=True)
    assert env["devices"] == [INF2_DEVICE]
    assert env["instance_type"] == "inf2.xlarge"


@pytest.mark.parametrize(("mode", "reason_start", "reason_part"), [
    ("garbage", "neuron-ls printed output that is not its JSON device list: ", "line"),
    ("fail", "`neuron-ls --json-output` exited with status 1: ", "failed to open the Neuron driver"),
])
def test_broken_neuron_ls_is_recorded_not_raised(host_tools, monkeypatch, mode, reason_start, reason_part):
    host_tools("neuron-ls")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS_MODE", mode)
    env = collect_env(quick=True)

    assert_json_round_trip(env)
    assert env["devices"] == [] and env["neuron_cores"] == 0
    reason = env["missing"]["devices.neuron"]
    assert reason.startswith(reason_start) and reason_part in reason
    if mode == "garbage":
        assert env["neuron_sdk"] == {"tools_version": "2.26.26.0", "runtime_version": None}
    else:
        assert env["neuron_sdk"] == {"tools_version": None, "runtime_version": None}
        assert env["missing"]["neuron_sdk.tools_version"].startswith("`neuron-ls --version` exited with status 1")
    assert env["warnings"] == []


@pytest.mark.parametrize("document", ['{"error": "driver not loaded"}', "[1, 2]", '[{"pid": 3}]', ""])
def test_neuron_ls_json_of_the_wrong_shape(host_tools, monkeypatch, tmp_path, document):
    fixture = tmp_path / "odd.json"
    fixture.write_text(document)
    host_tools("neuron-ls")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS", str(fixture))
    env = collect_env(quick=True)
    assert env["devices"] == []
    assert env["missing"]["devices.neuron"].startswith("neuron-ls printed output that is not its JSON device list")


def spy_on_tools(monkeypatch) -> list[dict]:
    """Every tool the probe runs (through subprocess.run): its argv, the timeout it was given, how it ended."""
    calls: list[dict] = []
    started: list[subprocess.Popen] = []
    real_run, real_popen = subprocess.run, subprocess.Popen

    class Recorded(real_popen):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            started.append(self)

    def run(argv, *args, timeout=None, **kwargs):
        call = {"argv": [str(a) for a in argv], "timeout": timeout, "outcome": "finished"}
        calls.append(call)
        before = len(started)
        try:
            return real_run(argv, *args, timeout=timeout, **kwargs)
        except subprocess.TimeoutExpired:
            call["outcome"] = "timed out"
            raise
        finally:
            call["returncode"] = started[before].returncode if len(started) > before else None

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    monkeypatch.setattr(subprocess, "run", run)
    return calls


def test_hung_neuron_ls_is_killed_and_not_asked_again(host_tools, monkeypatch):
    host_tools("neuron-ls")
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS_MODE", "hang")
    monkeypatch.setattr(commands, "TIMEOUT_S", 0.5)
    calls = spy_on_tools(monkeypatch)
    env = collect_env(quick=True)
    # The budget's mechanism, not the wall clock (bench/probe_budget.py times it): the hung tool was given
    # TIMEOUT_S, abandoned when it ran out (subprocess.run kills the child), named, and not asked again.
    [hung] = [call for call in calls if call["argv"][0].endswith("neuron-ls")]
    assert hung["argv"][1:] == ["--json-output"] and hung["timeout"] == 0.5 and hung["outcome"] == "timed out"
    assert hung["returncode"] == -signal.SIGKILL  # killed, not left running
    assert env["missing"]["devices.neuron"] == "`neuron-ls --json-output` did not finish within 0.5 s"
    assert env["missing"]["neuron_sdk.tools_version"] == "not asked: neuron-ls did not answer in time"


def test_neuron_ls_found_in_the_neuron_bin_dir_off_path(monkeypatch, tmp_path):
    # PATH has only python3 (for the double's shebang); neuron-ls sits in /opt/aws/neuron/bin's stand-in.
    bindir = tmp_path / "py-only"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    neuron_bin = tmp_path / "opt-aws-neuron-bin"
    neuron_bin.mkdir()
    (neuron_bin / "neuron-ls").symlink_to(DOUBLES / "neuron-ls")
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setattr(commands, "NEURON_BIN_DIR", str(neuron_bin))
    assert collect_env(quick=True)["devices"] == [INF2_DEVICE]


# --------------------------------------------------------------------------- nvidia-smi


def test_nvidia_smi_gpus_in_bytes(host_tools, monkeypatch):
    host_tools("nvidia-smi")
    monkeypatch.setenv("NEURONBENCH_FAKE_NVIDIA_SMI_COUNT", "2")
    env = collect_env(quick=True)

    assert_json_round_trip(env)
    assert env["devices"] == [
        {"kind": "gpu", "index": 0, "name": "NVIDIA A10G", "memory_bytes": A10G_BYTES,
         "driver": "550.127.05", "uuid": "GPU-6f0e8a3c-2b1d-4c5e-9a7f-0d1e2f3a4b5c"},
        {"kind": "gpu", "index": 1, "name": "NVIDIA A10G", "memory_bytes": A10G_BYTES,
         "driver": "550.127.05", "uuid": "GPU-1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"},
    ]
    assert env["gpus"] == 2 and env["neuron_cores"] == 0
    assert "devices.gpu" not in env["missing"]
    assert env["missing"]["devices.neuron"].startswith("neuron-ls not found")
    # A GPU host has no use for the Neuron compile cache: no disk warning even when nearly full.
    assert env["warnings"] == []


def test_nvidia_smi_unreadable_fields_are_null(host_tools, monkeypatch):
    host_tools("nvidia-smi")
    monkeypatch.setenv("NEURONBENCH_FAKE_NVIDIA_SMI",
                       "0, NVIDIA H100 80GB HBM3, 81559, 570.86.15, GPU-aaaa\n1, [N/A], [N/A], 570.86.15, [N/A]\n")
    devices = collect_env(quick=True)["devices"]
    assert devices[0]["memory_bytes"] == 81559 * 1024 * 1024 and devices[0]["name"] == "NVIDIA H100 80GB HBM3"
    assert devices[1] == {"kind": "gpu", "index": 1, "name": None, "memory_bytes": None,
                          "driver": "570.86.15", "uuid": None}


@pytest.mark.parametrize(("mode", "text", "reason_part"), [
    ("fail", None, "exited with status 9: NVIDIA-SMI has failed because it couldn't communicate"),
    ("garbage", None, "nvidia-smi printed output that is not the queried CSV: line 1 has 1 fields"),
    ("", "0, NVIDIA A10G, 23028\n", "line 1 has 3 fields"),
    ("", "x, NVIDIA A10G, 23028, 550.127.05, GPU-1\n", "GPU index 'x' is not a number"),
    ("", "", "nvidia-smi lists no GPUs"),
])
def test_broken_nvidia_smi_is_recorded_not_raised(host_tools, monkeypatch, mode, text, reason_part):
    host_tools("nvidia-smi")
    monkeypatch.setenv("NEURONBENCH_FAKE_NVIDIA_SMI_MODE", mode)
    if text is not None:
        monkeypatch.setenv("NEURONBENCH_FAKE_NVIDIA_SMI", text)
    env = collect_env(quick=True)
    assert env["devices"] == [] and env["gpus"] == 0
    assert reason_part in env["missing"]["devices.gpu"]


def test_neuron_and_gpu_devices_together(host_tools):
    host_tools("neuron-ls", "nvidia-smi")
    env = collect_env(quick=True)
    assert [d["kind"] for d in env["devices"]] == ["neuron", "gpu"]
    assert env["neuron_cores"] == 2 and env["gpus"] == 1


# --------------------------------------------------------------------------- IMDS


def test_imds_v2_on_loopback(monkeypatch):
    with ImdsServer() as server:
        monkeypatch.setenv("NEURONBENCH_IMDS_ENDPOINT", server.url)
        env = collect_env()
    assert env["instance_type"] == "inf2.xlarge" and env["region"] == "us-east-1"
    assert "instance_type" not in env["missing"] and "region" not in env["missing"]
    assert server.log == [
        ("PUT", "/latest/api/token", "60"),
        ("GET", "/latest/meta-data/instance-type", TOKEN),
        ("GET", "/latest/meta-data/placement/region", TOKEN),
    ]


def test_quick_probe_skips_imds(monkeypatch):
    with ImdsServer() as server:
        monkeypatch.setenv("NEURONBENCH_IMDS_ENDPOINT", server.url)
        env = collect_env(quick=True)
    assert server.log == []
    assert env["instance_type"] is None
    assert env["missing"]["instance_type"] == "not looked up (quick probe)"


def spy_on_imds(monkeypatch) -> list[tuple[str, float]]:
    """(path, timeout) of every IMDS request the probe sends, as it hands them to urllib."""
    sent: list[tuple[str, float]] = []
    real_open = urllib.request.OpenerDirector.open

    def open_(self, req, data=None, timeout=None):
        sent.append((urllib.parse.urlsplit(req.full_url).path, timeout))
        return real_open(self, req, data, timeout)

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", open_)
    return sent


def test_imds_that_never_answers_costs_at_most_the_budget(monkeypatch):
    sent = spy_on_imds(monkeypatch)
    with SilentServer() as server:
        monkeypatch.setenv("NEURONBENCH_IMDS_ENDPOINT", server.url)
        env = collect_env()
    # The mechanism (bench/probe_budget.py times it): the token request is given what is left of the 1.0 s
    # budget as its timeout, and once it times out nothing more is asked.
    [(path, timeout)] = sent
    assert path == "/latest/api/token" and 0 < timeout <= imds.BUDGET_S == 1.0
    assert env["instance_type"] is None and env["region"] is None
    assert env["missing"]["instance_type"].startswith(
        f"IMDS at {server.url} did not answer within 1.0 s (in a container, raise the instance's IMDSv2 "
        "hop limit")


def test_imds_budget_spans_all_requests(monkeypatch):
    # Each GET takes 0.6 s: the first fits in the 1 s budget, the second cannot.
    sent = spy_on_imds(monkeypatch)
    with ImdsServer(get_delay=0.6) as server:
        monkeypatch.setenv("NEURONBENCH_IMDS_ENDPOINT", server.url)
        env = collect_env()
    # One deadline for all requests: each is given what is left of it, so the request after the 0.6 s answer
    # gets at most 0.4 s, or is not sent at all once the budget is spent (a loaded machine).
    paths, timeouts = [p for p, _ in sent], [t for _, t in sent]
    assert paths[:2] == ["/latest/api/token", "/latest/meta-data/instance-type"]
    assert paths[2:] in ([], ["/latest/meta-data/placement/region"])
    assert all(0 < t <= imds.BUDGET_S for t in timeouts) and timeouts == sorted(timeouts, reverse=True)
    assert all(t <= imds.BUDGET_S - 0.6 for t in timeouts[2:])
    assert env["instance_type"] == "inf2.xlarge"
    assert env["region"] is None and "did not answer within 1.0 s" in env["missing"]["region"]


def test_imds_refused_connection(monkeypatch):
    url = closed_port_url()
    monkeypatch.setenv("NEURONBENCH_IMDS_ENDPOINT", url)
    env = collect_env()
    assert env["instance_type"] is None
    assert env["missing"]["instance_type"] == f"IMDS at {url} refused the connection"


def test_imds_ignores_http_proxy(monkeypatch):
    # A proxy in the agent's environment must never see metadata requests.
    monkeypatch.setenv("http_proxy", closed_port_url())
    monkeypatch.setenv("HTTP_PROXY", closed_port_url())
    with ImdsServer(instance_type="trn1.32xlarge", region="us-west-2") as server:
        monkeypatch.setenv("NEURONBENCH_IMDS_ENDPOINT", server.url + "/")
        env = collect_env()
    assert (env["instance_type"], env["region"]) == ("trn1.32xlarge", "us-west-2")


# --------------------------------------------------------------------------- venvs and warnings


def test_neuron_venvs_are_reported(monkeypatch, tmp_path, host_tools):
    root = tmp_path / "opt"
    with_neuronx = make_venv(root, "aws_neuronx_venv_pytorch_2_9",
                             {"torch-neuronx": "2.9.0", "torch-xla": "2.9.0", "torch": "2.9.0"})
    without = make_venv(root, "aws_neuronx_venv_pytorch_2_9_nxd_inference", {"torch-xla": "2.9.0"},
                        py="python3.11")
    (root / "aws_neuronx_venv_pytorch_notes.txt").write_text("not a venv")
    monkeypatch.setenv("NEURONBENCH_NEURON_VENV_GLOB", str(root / "aws_neuronx_venv_pytorch_*"))
    host_tools("neuron-ls")
    env = collect_env(quick=True)

    assert env["neuron_venvs"] == [
        {"path": str(with_neuronx), "python": str(with_neuronx / "bin" / "python3"),
         "torch_neuronx": "2.9.0", "torch_xla": "2.9.0", "torch": "2.9.0"},
        {"path": str(without), "python": str(without / "bin" / "python3"),
         "torch_neuronx": None, "torch_xla": "2.9.0", "torch": None},
    ]
    assert "neuron_venvs" not in env["missing"]
    venv_python = str(with_neuronx / "bin" / "python3")
    assert env["missing"]["torch_neuronx"] == (
        f"not installed for {sys.executable}; {venv_python} has torch-neuronx 2.9.0")
    assert env["warnings"] == [
        INF2_BUSY_WARNING,
        f"torch-neuronx is not installed for {sys.executable} but {venv_python} has torch-neuronx 2.9.0: "
        f"register the host with `--python {venv_python}` so runs use that venv.",
    ]


def test_sdk_2_32_warning_when_no_python_has_torch_neuronx(monkeypatch, tmp_path, host_tools):
    root = tmp_path / "opt"
    make_venv(root, "aws_neuronx_venv_pytorch_2_10", {"torch-xla": "2.10.0"})
    pattern = str(root / "aws_neuronx_venv_pytorch_*")
    monkeypatch.setenv("NEURONBENCH_NEURON_VENV_GLOB", pattern)
    idle = tmp_path / "idle.json"
    doc = json.loads((NEURON_DATA / "neuron-ls-inf2-xlarge.json").read_text())
    doc[0]["neuron_processes"] = []
    idle.write_text(json.dumps(doc))
    monkeypatch.setenv("NEURONBENCH_FAKE_NEURON_LS", str(idle))
    host_tools("neuron-ls")
    assert collect_env(quick=True)["warnings"] == [sdk_232_warning(pattern)]


def test_no_sdk_warning_without_neuron_devices(monkeypatch, tmp_path):
    make_venv(tmp_path / "opt", "aws_neuronx_venv_pytorch_2_10", {"torch-xla": "2.10.0"})
    monkeypatch.setenv("NEURONBENCH_NEURON_VENV_GLOB", str(tmp_path / "opt" / "aws_neuronx_venv_pytorch_*"))
    assert collect_env(quick=True)["warnings"] == []


def test_low_disk_warning_for_the_compile_cache(monkeypatch, tmp_path, host_tools):
    cache = tmp_path / "not" / "yet" / "neuron-compile-cache"
    monkeypatch.setenv("NEURON_COMPILE_CACHE_URL", str(cache))
    monkeypatch.setenv("NEURONBENCH_MIN_CACHE_FREE_BYTES", str(1 << 62))
    host_tools("neuron-ls")
    env = collect_env(quick=True)

    free = shutil.disk_usage(str(tmp_path)).free
    assert env["compile_cache"]["path"] == str(cache)
    assert abs(env["compile_cache"]["free_bytes"] - free) < 256 * 1024 ** 2  # others write meanwhile
    low = [w for w in env["warnings"] if "compile cache" in w]
    assert len(low) == 1
    free_gib = env["compile_cache"]["free_bytes"] / GIB
    assert low[0].startswith(f"Only {free_gib:.1f} GiB is free for the Neuron compile cache at {cache} "
                             "(want at least 4294967296.0 GiB)")
    assert low[0].endswith("set NEURON_COMPILE_CACHE_URL to a larger disk.")
    assert env["warnings"][-1] == low[0]  # after the busy-core and SDK warnings


def test_compile_cache_default_and_threshold(monkeypatch):
    monkeypatch.delenv("NEURON_COMPILE_CACHE_URL")
    monkeypatch.delenv("NEURONBENCH_MIN_CACHE_FREE_BYTES")
    assert collect_env(quick=True)["compile_cache"]["path"] == "/var/tmp/neuron-compile-cache"
    assert preflight.min_cache_free_bytes() == 10 * GIB


def test_compile_cache_on_s3_and_file_urls(monkeypatch, tmp_path):
    monkeypatch.setenv("NEURON_COMPILE_CACHE_URL", "s3://my-bucket/neuron-cache")
    env = collect_env(quick=True)
    assert env["compile_cache"] == {"path": "s3://my-bucket/neuron-cache", "free_bytes": None}
    assert env["missing"]["compile_cache.free_bytes"] == "the compile cache is remote (s3://my-bucket/neuron-cache)"

    monkeypatch.setenv("NEURON_COMPILE_CACHE_URL", f"file://{tmp_path}/cache")
    cache = collect_env(quick=True)["compile_cache"]
    assert cache["path"] == f"{tmp_path}/cache" and cache["free_bytes"] > 0


def test_core_ranges():
    assert preflight.core_ranges([]) == ""
    assert preflight.core_ranges([3]) == "3"
    assert preflight.core_ranges([8, 0, 1, 2, 5, 7, 2]) == "0-2,5,7-8"


# --------------------------------------------------------------------------- bare interpreters


def probe_in_subprocess(python: str, *flags: str, env: dict | None = None) -> dict:
    code = "import remote_agent.probe as p, json; print(json.dumps(p.collect_env(quick=True)))"
    proc = subprocess.run([python, *flags, "-c", code], cwd=str(ROOT), capture_output=True, text=True,
                          timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_stdlib_only_python_reports_torch_missing():
    # -S: no site-packages, so only the stdlib (and the repo, from the cwd) can be imported.
    env = probe_in_subprocess(sys.executable, "-S", env=dict(os.environ))
    assert env["torch"] is None and env["timm"] is None and env["transformers"] is None
    assert env["missing"]["torch"] == f"not installed for {sys.executable}"
    assert env["missing"]["transformers"] == f"not installed for {sys.executable}"
    assert env["python"]["executable"] == sys.executable


def _python38() -> str | None:
    candidates = [shutil.which("python3.8") or ""]
    candidates += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.8*/bin/python3.8")))
    for path in candidates:
        if path and subprocess.run([path, "-c", "import sys; assert sys.version_info[:2] == (3, 8)"],
                                   capture_output=True, check=False).returncode == 0:
            return path
    return None


def test_probe_runs_on_python_3_8(host_tools, monkeypatch, tmp_path):
    python38 = _python38()
    if python38 is None:
        pytest.skip("no Python 3.8 interpreter on this machine")
    root = tmp_path / "opt"
    make_venv(root, "aws_neuronx_venv_pytorch_2_9", {"torch-neuronx": "2.9.0", "torch-xla": "2.9.0"})
    monkeypatch.setenv("NEURONBENCH_NEURON_VENV_GLOB", str(root / "aws_neuronx_venv_pytorch_*"))
    host_tools("neuron-ls", "nvidia-smi")
    env = probe_in_subprocess(python38, "-s", env=dict(os.environ))
    assert env["python"]["version"].startswith("3.8.")
    assert env["devices"][0] == INF2_DEVICE and env["gpus"] == 1
    assert env["neuron_venvs"][0]["torch_neuronx"] == "2.9.0"
    assert env["warnings"][0] == INF2_BUSY_WARNING


def test_probe_package_passes_vermin_for_python_3_8():
    vermin = Path(sys.executable).with_name("vermin")
    if not vermin.exists():
        pytest.skip("vermin is not installed in this environment")
    proc = subprocess.run([str(vermin), "-t=3.8-", "--no-tips", "--violations", "remote_agent/probe"],
                          cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
