"""Model libraries on a host over a real sshd: a missing one is offered, declined in one sentence, or installed.

The host's Python is a real venv without transformers (or torchvision), see host_python.py; pip on it
installs from a folder of wheels (PIP_NO_INDEX + PIP_FIND_LINKS in the SSH session's environment), so
no test needs the network.
"""
from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from app.core.errors import DeployError
from app.paths import AppPaths
from app.services.session import RunSession
from app.services.ssh_prompts import FROM_PYPI, NoPrompts
from app.services.ssh_transport import SshTransport
from remote_agent.protocol import RunSpec
from tests.e2e.conftest import add_host, remote_profile, remote_runs_dir
from tests.e2e.host_python import decoy_wheel, python_without, wheel_from_installed
from tests.e2e.sshd import make_server
from tests.helpers import TINY_ARGS, TINY_MODEL

HF_MODEL = "hf:prajjwal1/bert-tiny"
TRANSFORMERS = metadata.version("transformers")  # the app's own: what it installs on a host that lacks it
HUB = metadata.version("huggingface_hub")  # in the host's index beside it (wheel_from_installed)


class Recorder(NoPrompts):
    """Accepts new host keys, answers install offers as told, and keeps every offer it was made."""

    def __init__(self, install: dict[str, str] | None = None) -> None:
        super().__init__(True, install=install)
        self.offers: list = []

    def offer_install(self, offer):
        self.offers.append(offer)
        return super().offer_install(offer)


@pytest.fixture(scope="module")
def no_transformers(tmp_path_factory) -> Path:
    return python_without(tmp_path_factory.mktemp("host-python"), ("transformers",))


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    """The host's package index: the transformers this app has, and torchvision with a newer decoy beside it."""
    folder = tmp_path_factory.mktemp("index")
    wheel_from_installed("transformers", folder)
    wheel_from_installed("huggingface_hub", folder)
    wheel_from_installed("torchvision", folder)
    decoy_wheel(folder, "torchvision", "0.99.0", "torch==2.99.0")  # newest, but made for another torch
    return folder


@pytest.fixture
def host(tmp_path, ssh_client, index):
    server = make_server(tmp_path / "sshd", ssh_client.key, env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(index)})
    yield server.start()
    server.stop()


def hf_request() -> bytes:
    return json.dumps(RunSpec(workload="infer", model=HF_MODEL, backend="cpu", batch_sizes=(1,)).to_dict()).encode()


def test_an_hf_run_offers_transformers_alone_and_declining_is_one_sentence(host, data_dir, no_transformers):
    prompts = Recorder()
    ssh = SshTransport(remote_profile(host, python=str(no_transformers)), AppPaths.resolve(data_dir), prompts)
    with pytest.raises(DeployError) as caught:
        ssh.start(["run", "--run-id", "20260101-000000-abcdef"], stdin=hf_request())
    ssh.close()
    [offer] = prompts.offers  # timm and torchvision are there: only transformers is offered
    assert (offer.library, offer.host, offer.python, offer.choices) == ("transformers", "box", str(no_transformers),
                                                                         (FROM_PYPI,))
    assert offer.needed_by == "hf: models" and "the host needs internet" in offer.what
    message = str(caught.value)
    assert message == (f"hf: models need transformers, which {no_transformers} on box lacks: install it with "
                       f"`neuronbench hosts test box --install transformers` (the host needs internet)")
    assert not remote_runs_dir(host).exists()  # nothing started on the host


@pytest.mark.slow
def test_the_cli_run_fails_in_one_sentence_and_a_timm_run_on_that_host_asks_nothing(host, data_dir, run_cli,
                                                                                      ssh_env, no_transformers):
    add_host(data_dir, remote_profile(host, python=str(no_transformers)))
    out = run_cli("run", "--host", "box", "--workload", "infer", "--model", HF_MODEL, "--backend", "cpu",
                  "--batch-size", "1", "--json", "--accept-new-host-key", env=ssh_env)
    assert out.code != 0
    [result] = out.json()  # the failed run is kept, with the sentence
    assert result["status"] == "failed" and "hf: models need transformers" in result["error"]["message"]
    last = out.stderr.strip().splitlines()[-1]
    assert "transformers" in last and "--install transformers" in last, out.stderr

    prompts = Recorder()
    ssh = SshTransport(remote_profile(host, python=str(no_transformers)), AppPaths.resolve(data_dir), prompts)
    spec = RunSpec(workload="infer", model=TINY_MODEL, model_args={k: int(v) for k, v in
                                                                   (a.split("=") for a in TINY_ARGS)},
                   backend="cpu", batch_sizes=(1,), duration=0.1, min_iters=5, warmup=1)
    result = RunSession(ssh, spec).run()
    ssh.close()
    assert result["status"] == "ok" and prompts.offers == []  # a timm run does not need transformers


def test_hosts_test_install_transformers_installs_it_for_the_agent_and_the_probe_reports_it(
        host, data_dir, run_cli, ssh_env, no_transformers):
    add_host(data_dir, remote_profile(host, python=str(no_transformers)))
    out = run_cli("hosts", "test", "box", "--install", "transformers", "--json", "--accept-new-host-key", env=ssh_env)
    assert out.code == 0, out.stderr
    report = out.json()
    assert report["missing_libraries"] == [] and report["env"]["transformers"] == TRANSFORMERS
    assert f"pip plans transformers {TRANSFORMERS}" in out.stderr  # its dependencies are the host's own: nothing else
    site = host.home / ".cache" / "neuronbench" / "site"
    assert (site / "transformers" / "__init__.py").is_file()
    assert sorted(p.name for p in site.glob("*.dist-info")) == [f"transformers-{TRANSFORMERS}.dist-info"]
    # the host's own Python is untouched: only the agent sees it
    assert subprocess.run([str(no_transformers), "-c", "import transformers"], capture_output=True).returncode != 0

    again = run_cli("hosts", "test", "box", "--json", env=ssh_env)  # nothing is missing, nothing is asked
    assert again.code == 0 and again.json()["missing_libraries"] == []
    assert "installing" not in again.stderr and "need" not in again.stderr


def test_torchvision_is_the_release_made_for_the_hosts_torch(host, data_dir, tmp_path):
    python = python_without(tmp_path / "host-python", ("torchvision", "timm"))
    prompts = Recorder({"torchvision": FROM_PYPI})
    said: list[str] = []
    ssh = SshTransport(remote_profile(host, python=str(python)), AppPaths.resolve(data_dir), prompts,
                       on_progress=said.append)
    setup = ssh.setup(libraries=("torchvision",))
    ssh.close()
    assert [o.library for o in prompts.offers] == ["torchvision"]  # timm is missing too, but was not wanted
    assert "torch 2.9.0" in prompts.offers[0].what
    assert "torchvision" not in setup.missing and "timm" in setup.missing
    assert "pip plans torchvision 0.24.0" in said  # not the newer 0.99.0, which requires another torch
    check = subprocess.run([str(python), "-c", f"import sys; sys.path.append({setup.site_dir!r}); import torch, "
                            "torchvision; print(torchvision.__version__, torch.__version__)"],
                           capture_output=True, text=True)
    assert check.stdout.split()[0].startswith("0.24.0"), check.stderr


def test_a_package_the_host_has_too_old_is_named_in_one_sentence_and_nothing_is_installed(host, data_dir, tmp_path):
    python = python_without(tmp_path / "host-python", ("transformers",), older={"huggingface_hub": "0.16.4"})
    prompts = Recorder({"transformers": FROM_PYPI})
    ssh = SshTransport(remote_profile(host, python=str(python)), AppPaths.resolve(data_dir), prompts)
    with pytest.raises(DeployError) as caught:
        ssh.setup(libraries=("transformers",))
    ssh.close()
    assert str(caught.value) == (
        f"transformers needs huggingface_hub {HUB} but {python} on box has huggingface_hub 0.16.4, which would come "
        f"first for the agent and which NeuronBench does not replace: upgrade it there (`{python} -m pip install "
        f"'huggingface_hub=={HUB}'`) and try again")
    site = host.home / ".cache" / "neuronbench" / "site"
    assert not site.exists() or not any(site.iterdir())


def test_accepted_on_a_host_that_cannot_reach_an_index_is_one_sentence(tmp_path, ssh_client, data_dir,
                                                                        no_transformers):
    offline = make_server(tmp_path / "offline", ssh_client.key,
                          env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(tmp_path / "nothing")}).start()
    try:
        ssh = SshTransport(remote_profile(offline, python=str(no_transformers)), AppPaths.resolve(data_dir),
                           Recorder({"transformers": FROM_PYPI}))
        with pytest.raises(DeployError) as caught:
            ssh.start(["run", "--run-id", "20260101-000000-abcdef"], stdin=hf_request())
        ssh.close()
    finally:
        offline.stop()
    message = str(caught.value)
    assert message.startswith("pip on box found no way to install transformers: ") and "\n" not in message
    assert f"transformers=={TRANSFORMERS}" in message and message.endswith("(it needs to reach PyPI from there)")
