"""optimum-neuron offered like the model libraries, over a real sshd, on an XLA-era Neuron stand-in host.

The host is this computer dressed as an inf2.xlarge (test_neuron_native.neuron_env: listing, /dev/neuron0) whose
Python is this venv with torch-neuronx's stand-in (2.9, the XLA stack) on its path and no optimum-neuron.  pip on
it reads a folder of wheels (PIP_NO_INDEX + PIP_FIND_LINKS in the sessions' environment): an optimum-neuron wheel
packed from the stand-in in tests/doubles/python, so nothing reaches the network and the run after the install
generates through the product's optimum-neuron path.
"""
from __future__ import annotations

import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from app.core.errors import DeployError
from app.paths import AppPaths
from app.services.ssh_prompts import FROM_PYPI
from app.services.ssh_transport import SshTransport
from tests.conftest import DATA, REPO
from tests.e2e.conftest import add_host, remote_profile
from tests.e2e.host_python import decoy_wheel
from tests.e2e.sshd import make_server
from tests.e2e.test_host_libraries import Recorder
from tests.e2e.test_neuron_native import NATIVE_STAND_INS, neuron_env
from tests.e2e.test_neuron_stacks_ssh import SESSION_VARS
from tests.services.test_optimum_neuron_offer import RUN, request

STAND_INS = REPO / "tests" / "doubles" / "python"
GENERATE = ["--workload", "generate", "--model", f"hf:{DATA / 'models' / 'tiny-llama'}", "--task", "causal-lm",
            "--backend", "neuron", "--nproc", "2", "--batch-sizes", "2", "--input-lens", "8", "--output-lens", "4",
            "--warmup", "1", "--min-iters", "4", "--duration", "0.1", "--json", "--accept-new-host-key"]
PYTHON = sys.executable


def optimum_neuron_wheel(index: Path, version: str, requires: tuple[str, ...] = ("transformers",)) -> Path:
    """optimum-neuron packed from the stand-in, with the real one's shape of metadata (a ``neuronx`` extra)."""
    dist_info = f"optimum_neuron-{version}.dist-info"
    target = index / f"optimum_neuron-{version}-py3-none-any.whl"
    index.mkdir(parents=True, exist_ok=True)
    meta = ["Metadata-Version: 2.1", "Name: optimum-neuron", f"Version: {version}", "Provides-Extra: neuronx",
            *(f"Requires-Dist: {r}" for r in requires), 'Requires-Dist: torch-neuronx; extra == "neuronx"']
    with zipfile.ZipFile(target, "w") as archive:
        for source in ("optimum/__init__.py", "optimum/neuron/__init__.py"):
            archive.write(STAND_INS / source, source)
        archive.writestr(f"{dist_info}/METADATA", "\n".join(meta) + "\n")
        archive.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                               "Tag: py3-none-any\n")
        archive.writestr(f"{dist_info}/RECORD", "")
    return target


def neuronx_only(root: Path, stand_ins: Path = STAND_INS) -> Path:
    """torch-neuronx's stand-in alone: a Neuron venv without optimum-neuron."""
    root.mkdir(parents=True)
    for entry in stand_ins.iterdir():
        if entry.name.startswith("torch_neuronx"):
            (root / entry.name).symlink_to(entry)
    return root


def start_host(tmp_path: Path, key: Path, index: Path, stand_ins: Path = STAND_INS, device: bool = True):
    env = neuron_env({}, tmp_path, "neuron-ls-inf2-xlarge.json", neuronx_only(tmp_path / "path", stand_ins),
                     PYTHON, "inf2.xlarge")
    if not device:
        env["NEURONBENCH_NEURON_DEVICE_GLOB"] = str(tmp_path / "no-dev" / "neuron*")
    session = {name: env[name] for name in SESSION_VARS}
    session.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(index),
                   NEURONBENCH_NEURON_MODEL_CACHE=str(tmp_path / "neuron-models"))
    return make_server(tmp_path / "sshd", key, env=session).start()


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("index")
    optimum_neuron_wheel(folder, "0.4.5")
    return folder


def test_a_generate_run_on_the_xla_stack_offers_it_and_declining_names_the_command(tmp_path, ssh_client, data_dir,
                                                                                    index):
    host = start_host(tmp_path, ssh_client.key, index)
    try:
        prompts = Recorder()
        ssh = SshTransport(remote_profile(host, python=PYTHON), AppPaths.resolve(data_dir), prompts)
        with pytest.raises(DeployError) as caught:
            ssh.start(RUN, stdin=request(backend="neuron", model=f"hf:{DATA / 'models' / 'tiny-llama'}"))
        assert ssh.setup(libraries=("optimum-neuron",)).torch_neuronx.startswith("2.9.0.2.11.0")
        cpu = ssh.setup(libraries=())  # the same host's other runs ask nothing
        ssh.close()
    finally:
        host.stop()
    [offer, again] = prompts.offers
    assert offer == again and offer.library == "optimum-neuron" and offer.python == PYTHON
    assert "https://pip.repos.neuron.amazonaws.com" in offer.what and "the venv is not changed" in offer.what
    assert str(caught.value) == (
        f"generate runs on backend neuron (Neuron SDK 2.31 or older) need optimum-neuron, which {PYTHON} on box "
        f"lacks: install it with `neuronbench hosts test box --install optimum-neuron` (the host needs internet)")
    assert cpu.missing == ("optimum-neuron",)


@pytest.mark.parametrize("where", ["native", "no device"])
def test_a_native_stack_or_a_host_without_a_device_never_lacks_it(where, tmp_path, ssh_client, data_dir, index):
    stand_ins = NATIVE_STAND_INS if where == "native" else STAND_INS
    host = start_host(tmp_path, ssh_client.key, index, stand_ins, device=where != "no device")
    try:
        prompts = Recorder({"optimum-neuron": FROM_PYPI})
        ssh = SshTransport(remote_profile(host, python=PYTHON), AppPaths.resolve(data_dir), prompts)
        setup = ssh.setup(fresh=True, libraries=("optimum-neuron",))
        ssh.close()
    finally:
        host.stop()
    assert prompts.offers == [] and "optimum-neuron" not in setup.missing
    assert setup.torch_neuronx.startswith("2.13" if where == "native" else "2.9")


def test_a_plan_that_would_replace_a_package_of_the_neuron_venv_is_refused_in_one_sentence(tmp_path, ssh_client,
                                                                                           data_dir, index):
    newer = tmp_path / "index"
    optimum_neuron_wheel(newer, "0.4.5")
    optimum_neuron_wheel(newer, "0.4.6", ("transformers==4.99.0",))  # newest, made for another transformers
    decoy_wheel(newer, "transformers", "4.99.0", "filelock")
    host = start_host(tmp_path, ssh_client.key, newer)
    try:
        ssh = SshTransport(remote_profile(host, python=PYTHON), AppPaths.resolve(data_dir),
                           Recorder({"optimum-neuron": FROM_PYPI}))
        with pytest.raises(DeployError) as caught:
            ssh.setup(libraries=("optimum-neuron",))
        ssh.close()
    finally:
        host.stop()
    assert str(caught.value) == (
        f"optimum-neuron 0.4.6 needs transformers 4.99.0 but the Neuron venv's {PYTHON} on box has transformers "
        f"{metadata.version('transformers')}, and NeuronBench never replaces the Neuron SDK's packages: install the "
        f"optimum-neuron release made "
        f"for this SDK (torch-neuronx 2.9.0.2.11.0+testdouble) there yourself, or use a Neuron DLAMI venv that ships "
        f"it")
    site = host.home / ".cache" / "neuronbench" / "site"
    assert not site.exists() or not any(site.iterdir())


@pytest.mark.slow
def test_the_run_fails_until_hosts_test_installs_it_then_generates_through_it(tmp_path, ssh_client, data_dir,
                                                                             run_cli, ssh_env, index):
    host = start_host(tmp_path, ssh_client.key, index)
    try:
        add_host(data_dir, remote_profile(host, python=PYTHON))
        failed = run_cli("run", "--host", "box", *GENERATE, env=ssh_env)
        installed = run_cli("hosts", "test", "box", "--install", "optimum-neuron", "--json", env=ssh_env)
        ran = run_cli("run", "--host", "box", *GENERATE, env=ssh_env)
    finally:
        host.stop()
    assert failed.code != 0
    [result] = failed.json()  # the failed run is kept, with the sentence
    assert result["status"] == "failed" and "need optimum-neuron" in result["error"]["message"]
    assert "`neuronbench hosts test box --install optimum-neuron`" in failed.stderr.strip().splitlines()[-1]

    assert installed.code == 0, installed.stderr
    assert installed.json()["missing_libraries"] == []
    assert "pip plans optimum-neuron 0.4.5" in installed.stderr  # transformers and torch-neuronx are the venv's
    site = host.home / ".cache" / "neuronbench" / "site"
    assert sorted(p.name for p in site.glob("*.dist-info")) == ["optimum_neuron-0.4.5.dist-info"]
    # the venv itself is untouched: only the agent's processes see it
    assert subprocess.run([PYTHON, "-c", "import optimum.neuron"], capture_output=True).returncode != 0

    assert ran.code == 0, ran.stderr
    [result] = ran.json()
    assert result["status"] == "ok" and result["backend"] == "neuron"
    [point] = result["generate"]
    assert point["stack"] == "optimum-neuron 0.4.5 NeuronModelForCausalLM, tensor parallel 2"
    assert result["backend_detail"]["optimum_neuron"] == "0.4.5"
