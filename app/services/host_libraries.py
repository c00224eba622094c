"""The model libraries on a host: which a run needs, the offer to install a missing one, and the install.

A model source imports its library on the host (remote_agent/workloads/sources):
``timm:`` needs timm and torchvision (timm imports it), ``torchvision:`` torchvision,
``hf:`` transformers, ``file:`` only torch.  deploy.inspect_host finds which of them
the host's Python lacks; here a missing one is offered to the person (``SshPrompts``),
for everything at ``hosts test`` and for what a run's own source needs at ``run``.

Everything goes into the agent's private site (``~/.cache/neuronbench/site``),
which the agent appends to ``sys.path``: the host's own packages always come first
and nothing of the host's Python changes, so no root, no venv write access and no
``--break-system-packages`` are needed.  How each library gets there:

- **timm** is pure Python: ``pip install --no-deps timm==<this app's>`` on the host,
  or the wheel this app carries (timm_wheel.py) when the host has no internet.
- **torchvision** is compiled against one torch release and must match the host's
  exactly.  No table here: pip on the host picks it from torchvision's own
  requirements (``Requires-Dist: torch==2.9.0``), asked for ``torchvision`` together
  with ``torch==<the host's>``, so it never plans to touch torch.  A torch from
  PyTorch's own index (a version like ``2.9.0+cpu``) gets that index too
  (``download.pytorch.org/whl/cpu``), for the matching build.
- **transformers** is pure Python but needs tokenizers, safetensors and regex, which
  are compiled per platform, so no wheel set is carried: the host needs internet.
- **optimum-neuron** is not a model source's library but the neuron backend's generation
  path on the XLA-era Neuron SDK (<= 2.31): a ``generate`` run on backend neuron (or auto,
  where a Neuron device is) needs it when the host's Python has that stack (deploy says
  which, from torch-neuronx's version; TorchNeuron, SDK 2.33, generates without it).  That
  Python is the Neuron venv's (deploy picks it, and the agent and every process it starts run
  on it, each appending the private site to ``sys.path``; children spawned by multiprocessing
  get their parent's ``sys.path``), so the agent's private site reaches the generation: it goes
  there like the others, never into the venv, which is the Neuron SDK's and may be root's.  Not
  through PYTHONPATH either: that comes before the venv's own packages and could shadow them.  pip is asked for
  ``optimum-neuron[neuronx]`` with the venv's own ``torch`` and ``torch-neuronx`` pinned, from
  PyPI and Neuron's index, so it picks the optimum-neuron release made for that SDK.

For torchvision, transformers and optimum-neuron pip first plans against the host's installed
packages (``pip install --dry-run --report``, pip 22.2 or newer), then installs just
the planned distributions with ``--no-deps --target``.  A planned package that the
host already has in another version is refused in one sentence: the host's copy
would shadow ours, and replacing the host's packages is not ours to do.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import paramiko

from app.core.errors import DeployError
from app.core.hosts import HostProfile
from app.services.deploy import MODEL_LIBRARIES, OPTIMUM_NEURON, RemoteSetup
from app.services.remote_exec import CommandResult, run_command
from app.services.remote_upload import upload_file
from app.services.ssh_prompts import FROM_PYPI, FROM_WHEEL, InstallOffer, SshPrompts
from app.services.timm_wheel import carried_wheel, installed_timm_version
from remote_agent.model_ref import ModelRefError, parse_model_ref

Say = Callable[[str], None]

# What each --model source imports on the host (remote_agent/workloads/sources).
_NEEDED_BY_SOURCE = {"timm": ("torchvision", "timm"), "torchvision": ("torchvision",), "hf": ("transformers",),
                     "file": ()}
USED_BY = {"torchvision": "timm: and torchvision: models", "timm": "timm: models", "transformers": "hf: models",
           OPTIMUM_NEURON: "generate runs on backend neuron (Neuron SDK 2.31 or older)"}
# The transformers the agent's hf source is tested with (pyproject's `local` extra pins it), used when this
# app's own environment has none to copy the version from.
TRANSFORMERS_VERSION = "5.24.0"
PIP_PLAN_MIN = (22, 2)  # `pip install --dry-run --report` came in pip 22.2
PYTORCH_INDEX = "https://download.pytorch.org/whl/"
NEURON_INDEX = "https://pip.repos.neuron.amazonaws.com"  # torch-neuronx, neuronx-cc, neuronx-distributed
_PIP_QUIET = ("--quiet", "--no-input", "--disable-pip-version-check")
_UNPACK_PY = "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])"
# Ask pip on the host what installing the requirements would add, counting what its Python has (the agent's
# site included), and say for each planned distribution which version that Python has now ("" none) and
# whether that one is in the agent's site (ours to replace).  argv: site, then pip's arguments.
_PLAN_PY = """\
import json, os, subprocess, sys
site = sys.argv[1]
env = dict(os.environ)
env["PYTHONPATH"] = os.pathsep.join([site] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--report", "-"] + sys.argv[2:],
                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
sys.stderr.write(proc.stderr.decode("utf-8", "replace"))
if proc.returncode != 0:
    sys.exit(proc.returncode)
sys.path.append(site)
from importlib import metadata
for item in json.loads(proc.stdout.decode("utf-8"))["install"]:
    name = item["metadata"]["name"]
    try:
        dist = metadata.distribution(name)
        have, ours = dist.version, os.path.realpath(str(dist.locate_file(""))) == os.path.realpath(site)
    except metadata.PackageNotFoundError:
        have, ours = "", False
    sys.stdout.write("nb-plan=%s %s %s %d\\n" % (name, item["metadata"]["version"], have or "-", ours))
"""


def libraries_for_model(model: str) -> tuple[str, ...]:
    """The MODEL_LIBRARIES a ``--model`` needs on the host (none for a name the agent will refuse anyway)."""
    try:
        return _NEEDED_BY_SOURCE.get(parse_model_ref(model).source, ())
    except ModelRefError:
        return ()


def libraries_for_command(args: Sequence[str], stdin: bytes | None) -> tuple[str, ...]:
    """What an agent command needs: a ``run``'s model source decides (its spec is on stdin); the rest need none."""
    if not args or args[0] != "run" or not stdin:
        return ()
    try:
        request = json.loads(stdin)
    except ValueError:
        return ()
    spec = request.get("spec", request) if isinstance(request, dict) else None  # a node's run wraps its spec
    if not isinstance(spec, dict):
        return ()
    model = spec.get("model")
    needed = libraries_for_model(model) if isinstance(model, str) else ()
    if spec.get("workload") == "generate" and spec.get("backend", "auto") in ("neuron", "auto") and \
            spec.get("neuron_stack") != "native":
        # Only where the host's Python has the XLA stack and a Neuron device is optimum-neuron ever missing
        # (deploy.needs_optimum_neuron): elsewhere asking for it costs nothing.
        needed += (OPTIMUM_NEURON,)
    return needed


def _version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:3])


def _transformers_version() -> str:
    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return TRANSFORMERS_VERSION


def _pip_problem(setup: RemoteSetup) -> str | None:
    if not setup.pip:
        return (f"{setup.python} has no pip to install it with: install pip for it (the python3-pip package, or "
                f"`{setup.python} -m ensurepip --user`)")
    if _version_tuple(setup.pip) < PIP_PLAN_MIN:
        return (f"pip {setup.pip} there is too old to plan the install (NeuronBench needs pip "
                f"{'.'.join(map(str, PIP_PLAN_MIN))} or newer): upgrade it with "
                f"`{setup.python} -m pip install --user --upgrade pip`")
    return None


def install_offer(setup: RemoteSetup, host: str, library: str, wheels_dir: Path) -> InstallOffer | str:
    """How ``library`` could be installed for the setup's Python, or the sentence why it cannot be from here."""
    site = setup.site_dir
    if library == "timm":
        version = installed_timm_version()
        choices = ((FROM_PYPI,) if setup.pip else ()) + ((FROM_WHEEL,) if carried_wheel(wheels_dir) else ())
        if not choices:
            return _pip_problem(setup) or "this app carries no timm wheel"
        ways = [way for choice, way in ((FROM_PYPI, "pip-installed from PyPI (the host needs internet)"),
                                        (FROM_WHEEL, "unpacked from the wheel this app carries (no internet needed)"))
                if choice in choices]
        what = f"timm{' ' + version if version else ''} goes into {site}, for the agent only: {' or '.join(ways)}"
        return InstallOffer(host, setup.python, library, choices, USED_BY[library], what)
    if library == "torchvision" and not setup.torch:
        return (f"torch is missing there, and torchvision must be the build made for the host's torch: install "
                f"PyTorch for {setup.python} first")
    problem = _pip_problem(setup)
    if problem:
        return problem
    if library == "torchvision":
        label = setup.torch.partition("+")[2]
        what = (f"the torchvision release made for the host's torch {setup.torch} (pip picks it from torchvision's "
                f"own requirements, torch is not touched) goes into {site}, for the agent only, from PyPI"
                f"{' and ' + PYTORCH_INDEX + label if label else ''}; the host needs internet")
    elif library == OPTIMUM_NEURON:
        what = (f"the optimum-neuron release made for the host's torch-neuronx {setup.torch_neuronx} and the packages "
                f"it needs that the Neuron venv lacks go into {site}, for the agent only (the venv is not changed), "
                f"from PyPI and {NEURON_INDEX}; the host needs internet, and a plan that would replace a package the "
                f"venv has (torch, torch-neuronx, transformers, ...) is refused")
    else:
        what = (f"transformers {_transformers_version()} and the packages it needs that the host lacks (tokenizers, "
                f"huggingface_hub, safetensors, regex, ...) go into {site}, for the agent only, from PyPI; the host "
                f"needs internet (tokenizers and safetensors are built per platform, so this app carries no wheels)")
    return InstallOffer(host, setup.python, library, (FROM_PYPI,), USED_BY[library], what)


def missing_sentence(setup: RemoteSetup, host: str, library: str, wheels_dir: Path) -> str:
    """Why a run that needs ``library`` cannot start, and what to do: one sentence."""
    lacks = f"{USED_BY[library]} need {library}, which {setup.python} on {host} lacks"
    offer = install_offer(setup, host, library, wheels_dir)
    if isinstance(offer, str):
        if library == OPTIMUM_NEURON:  # e.g. no pip yet: once that is fixed, the same command installs it
            return (f"{lacks}, and it cannot be installed from here yet: {offer}, then run `neuronbench hosts test "
                    f"{host} --install {library}` (the host needs internet)")
        return f"{lacks}, and it cannot be installed from here: {offer}"
    if FROM_WHEEL in offer.choices:
        return f"{lacks}: install it with `neuronbench hosts test {host} --install-timm wheel` (no internet needed)"
    return f"{lacks}: install it with `neuronbench hosts test {host} --install {library}` (the host needs internet)"


def ensure_libraries(transport: paramiko.Transport, profile: HostProfile, setup: RemoteSetup,
                     libraries: Sequence[str], prompts: SshPrompts, wheels_dir: Path, say: Say) -> RemoteSetup:
    """Offer each of ``libraries`` the setup's Python lacks and install what the person accepts.

    Returns the setup with the installed ones no longer missing; one that was declined, or that
    cannot be installed from here, stays missing (the caller says so).  A failed install raises
    DeployError with pip's sentence.
    """
    for library in [name for name in MODEL_LIBRARIES if name in libraries and name in setup.missing]:
        offer = install_offer(setup, profile.name, library, wheels_dir)
        if isinstance(offer, str):
            continue
        how = prompts.offer_install(offer)
        if how not in offer.choices:
            continue
        say(f"installing {library} for {setup.python} into {setup.site_dir} ({how})")
        if library == "timm":
            _install_timm(transport, profile, setup, how, wheels_dir, say)
        else:
            _install_planned(transport, profile, setup, library, say)
        setup = replace(setup, missing=tuple(name for name in setup.missing if name != library))
        say(f"{library} is installed for {setup.python}")
    return setup


def _install_timm(transport: paramiko.Transport, profile: HostProfile, setup: RemoteSetup, how: str,
                  wheels_dir: Path, say: Say) -> None:
    if how == FROM_WHEEL:
        wheel = carried_wheel(wheels_dir)
        if wheel is None:
            raise DeployError("the app carries no timm wheel (timm is not installed with it); choose the pip install")
        sent = upload_file(transport, wheel, f"{setup.cache_dir}/wheels", wheel.name, setup.python,
                           "the timm wheel", profile.name, timeout=600)
        say(f"uploaded {wheel.name} ({wheel.stat().st_size // 1024} KiB) over {sent.via}")
        argv = [setup.python, "-c", _UNPACK_PY, sent.path, setup.site_dir]
    else:
        version = installed_timm_version()
        argv = [setup.python, "-m", "pip", "install", *_PIP_QUIET, "--no-deps", "--upgrade", "--target",
                setup.site_dir, f"timm=={version}" if version else "timm"]
    result = run_command(transport, argv, timeout=600)
    if result.code != 0:
        raise DeployError(f"installing timm on {profile.name} failed: {result.stderr_line()}",
                          detail=result.stderr.decode("utf-8", "replace"))


def _requirements(setup: RemoteSetup, library: str) -> tuple[list[str], list[str]]:
    """pip's requirements and index options for ``library`` on this host."""
    if library == "torchvision":
        label = setup.torch.partition("+")[2]  # cpu, cu128, rocm6.4: the PyTorch index the torch came from
        return ["torchvision", f"torch=={setup.torch}"], (["--extra-index-url", PYTORCH_INDEX + label] if label else [])
    if library == OPTIMUM_NEURON:
        # The venv's torch and torch-neuronx pinned: pip picks the optimum-neuron whose neuronx extra names them.
        have = (("torch", setup.torch), ("torch-neuronx", setup.torch_neuronx))
        pins = [f"{name}=={version}" for name, version in have if version]
        return [f"{OPTIMUM_NEURON}[neuronx]", *pins], ["--extra-index-url", NEURON_INDEX]
    return [f"transformers=={_transformers_version()}"], []


def _pip_failure(result: CommandResult) -> str:
    line = result.stderr_line()
    return line[len("ERROR: "):] if line.startswith("ERROR: ") else line


def _shadowed(names: dict[str, tuple[str, str, str, str]]) -> list[tuple[str, str, str]]:
    """The planned packages the host's Python has in another version, not in the agent's site: (name, new, have)."""
    return [(name, version, have) for name, version, have, ours in names.values() if have != "-" and ours == "0"]


def _neuron_refusal(setup: RemoteSetup, host: str, names: dict[str, tuple[str, str, str, str]]) -> str:
    """One sentence: optimum-neuron would need other versions of the Neuron venv's packages."""
    release = names.get(OPTIMUM_NEURON, (OPTIMUM_NEURON, "", "", ""))[1]
    clash = _shadowed(names)
    needs = " and ".join(f"{name} {version}" for name, version, _have in clash)
    has = " and ".join(f"{name} {have}" for name, _version, have in clash)
    return (f"optimum-neuron{' ' + release if release else ''} needs {needs} but the Neuron venv's {setup.python} on "
            f"{host} has {has}, and NeuronBench never replaces the Neuron SDK's packages: install the optimum-neuron "
            f"release made for this SDK (torch-neuronx {setup.torch_neuronx or 'unknown'}) there yourself, or use a "
            f"Neuron DLAMI venv that ships it")


def _install_planned(transport: paramiko.Transport, profile: HostProfile, setup: RemoteSetup, library: str,
                     say: Say) -> None:
    requirements, index = _requirements(setup, library)
    planned = run_command(transport, [setup.python, "-c", _PLAN_PY, setup.site_dir, *_PIP_QUIET, *index,
                                      *requirements], timeout=600)
    if planned.code != 0:
        where = f"PyPI and {NEURON_INDEX}" if library == OPTIMUM_NEURON else "PyPI"
        raise DeployError(f"pip on {profile.name} found no way to install {library}: {_pip_failure(planned)} "
                          f"(it needs to reach {where} from there)", detail=planned.stderr.decode("utf-8", "replace"))
    plan = [line[len("nb-plan="):].split() for line in planned.text().splitlines() if line.startswith("nb-plan=")]
    names = {re.sub(r"[-_.]+", "-", name).lower(): (name, version, have, ours) for name, version, have, ours in plan}
    if library == OPTIMUM_NEURON and _shadowed(names):
        raise DeployError(_neuron_refusal(setup, profile.name, names))
    if "torch" in names:
        raise DeployError(f"pip on {profile.name} would replace torch {setup.torch} to install {library}; "
                          f"NeuronBench does not change the host's torch: install {library} there yourself")
    shadowed = _shadowed(names)
    if shadowed:
        needs = " and ".join(f"{name} {version}" for name, version, _have in shadowed)
        has = " and ".join(f"{name} {have}" for name, _version, have in shadowed)
        pins = " ".join(f"'{name}=={version}'" for name, version, _have in shadowed)
        raise DeployError(f"{library} needs {needs} but {setup.python} on {profile.name} has {has}, which would "
                          f"come first for the agent and which NeuronBench does not replace: upgrade it there "
                          f"(`{setup.python} -m pip install {pins}`) and try again")
    if not names:
        raise DeployError(f"pip on {profile.name} says {library} is installed for {setup.python}, yet it does not "
                          f"import there: check that Python's packages (`{setup.python} -m pip check`)")
    wanted = [f"{name}=={version}" for name, version, _have, _ours in names.values()]
    say(f"pip plans {', '.join(f'{name} {version}' for name, version, _h, _o in names.values())}")
    result = run_command(transport, [setup.python, "-m", "pip", "install", *_PIP_QUIET, *index, "--no-deps",
                                     "--no-compile", "--upgrade", "--target", setup.site_dir, *wanted], timeout=600)
    if result.code != 0:
        raise DeployError(f"installing {library} on {profile.name} failed: {_pip_failure(result)}",
                          detail=result.stderr.decode("utf-8", "replace"))
