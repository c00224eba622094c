"""Getting a host ready to run the agent: pick its Python, upload the agent, see its model libraries.

One remote command inspects the host: which Python (the profile's, else the
newest Neuron venv, else ``python3``), its version, whether the agent of this
exact content is already in ``~/.cache/neuronbench/agent/``, which model libraries
(timm, torchvision, transformers) import, and the torch and pip there (offering a
missing library is host_libraries' part).  The agent zipapp is uploaded only
when it is missing (over SFTP, or over an exec channel on hosts without SFTP:
see remote_upload), into 0700 directories, under
a temporary name renamed into place when complete; then it is unpacked next to
itself and byte-compiled by the host's Python.

Why unpacked: Python never caches bytecode for modules imported from a zip, so
every start of a zipapp compiles the agent's modules again, about half of the
time from ``run`` to its first event.  The unpacked folder (renamed into place
whole) is what runs; its name carries the content hash as the .pyz's does.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import paramiko

from app.core.errors import DeployError
from app.core.hosts import HostProfile
from app.services.agent_bundle import AgentBundle
from app.services.remote_exec import run_command
from app.services.remote_space import disk_full_error, low_space_error
from app.services.remote_upload import upload_file
from remote_agent.neuron_stack import classify

MIN_PYTHON = (3, 8)
# As remote_agent/probe/packages.py DEFAULT_VENV_GLOB: the Neuron DLAMI's PyTorch venvs.
# Both eras: TorchNeuron's venv (aws_neuronx_venv_torch_neuronx_*) sorts first where a host had both.
NEURON_VENV_GLOB = "/opt/aws_neuronx_venv_pytorch_* /opt/aws_neuronx_venv_torch_neuronx_*"
# The libraries a model source may need (remote_agent/workloads/sources), in the order they are offered:
# timm imports torchvision, so torchvision comes first.
# optimum-neuron is not a model source's but the neuron backend's generation path on the XLA-era Neuron SDK
# (<= 2.31): host_libraries offers it for generate runs there, and it counts as missing only on such a host.
OPTIMUM_NEURON = "optimum-neuron"
MODEL_LIBRARIES = ("torchvision", "timm", "transformers", OPTIMUM_NEURON)
# The module each library is looked for as (the rest: their own name).
_MODULES = {OPTIMUM_NEURON: "optimum.neuron"}
# What a remembered setup holds (ssh_transport keys its memory with it): 2 added torch-neuronx and the devices,
# without which a setup remembered before could never say that optimum-neuron is missing.
SETUP_FORMAT = 2

# POSIX sh, one line (no user text inside: the Python preference, file name and glob come as $1..$3, the
# module names as $5).
_INSPECT_SH = (
    'py="$1"; cache="${XDG_CACHE_HOME:-$HOME/.cache}/neuronbench"; '
    'if [ -z "$py" ]; then for d in $(ls -d $3 2>/dev/null | sort -rV 2>/dev/null); do '
    'if [ -x "$d/bin/python" ]; then py="$d/bin/python"; break; fi; done; fi; '
    '[ -n "$py" ] || py=python3; '
    'echo "nb-cache=$cache"; echo "nb-python=$py"; '
    '[ -f "$cache/agent/$2/__main__.py" ] && echo "nb-agent=present"; '
    'command -v "$py" >/dev/null 2>&1 || { echo "nb-missing=1"; exit 0; }; '
    'exec "$py" -c "$4" "$cache/site" "$5"'
)
# Prints the version before anything a Python 2 or 3.7 would choke on, so an old Python is named, not a crash.
# The libraries are looked for as the agent sees them (its private site appended); torch's and pip's versions
# come from their metadata (no import: importing torch takes seconds), and torch-neuronx's (which Neuron stack:
# remote_agent/neuron_stack) with whether a Neuron device is there (the agent's glob, NEURONBENCH_NEURON_DEVICE_GLOB
# as remote_agent/probe/neuron reads it).  A dotted module (optimum.neuron) is missing when its parent is.  Last,
# the free space on the disk of the agent's folder (its nearest existing parent), for the pre-flight (remote_space).
_INSPECT_PY = (
    'import sys;v=sys.version_info;'
    'sys.stdout.write("nb-version=%d.%d.%d\\nnb-executable=%s\\n" % (v[0], v[1], v[2], sys.executable));'
    'sys.stdout.flush();sys.path.append(sys.argv[1]);import importlib.util as u\n'
    'def f(n):\n'
    ' try: return u.find_spec(n) is not None\n'
    ' except Exception: return False\n'
    'sys.stdout.write("nb-missing-libs=%s\\n" % ",".join(n for n in sys.argv[2].split() if not f(n)))\n'
    'from importlib import metadata as m\n'
    'for n in ("torch", "pip", "torch-neuronx"):\n'
    ' try: sys.stdout.write("nb-%s=%s\\n" % (n, m.version(n)))\n'
    ' except Exception: pass\n'
    'import glob, os\n'
    'sys.stdout.write("nb-neuron-devices=%d\\n" % len(glob.glob(os.environ.get("NEURONBENCH_NEURON_DEVICE_GLOB") '
    'or "/dev/neuron*")))\n'
    'p = os.path.dirname(os.path.abspath(sys.argv[1]))\n'
    'while not os.path.isdir(p) and os.path.dirname(p) != p:\n    p = os.path.dirname(p)\n'
    's = os.statvfs(p)\nsys.stdout.write("nb-free=%d\\n" % (s.f_bavail * s.f_frsize))'
)
# Unpack the agent into a temporary folder, byte-compile it (pyc for this Python, tracebacks naming the
# final path) and rename it into place: a half-made folder is never seen, a concurrent deploy just loses.
_INSTALL_AGENT_PY = """\
import compileall, os, shutil, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
tmp = "%s.%d.tmp" % (dst, os.getpid())
zipfile.ZipFile(src).extractall(tmp)
os.chmod(tmp, 0o700)
ok = compileall.compile_dir(tmp, quiet=1, ddir=dst)
try:
    os.rename(tmp, dst)
except OSError:
    shutil.rmtree(tmp)
sys.exit(0 if ok else 1)
"""


@dataclass(frozen=True)
class RemoteSetup:
    """What a host has once it is ready: the Python and the agent path that every agent command uses."""

    python: str
    python_version: str
    cache_dir: str
    agent_path: str
    uploaded: bool
    missing: tuple[str, ...] = ()  # the MODEL_LIBRARIES this Python cannot import (the agent's site included)
    torch: str = ""  # torch's version there (its metadata: "2.9.0", or "2.9.0+cpu" from PyTorch's index), "" if none
    pip: str = ""  # pip's version there, "" if it has none
    torch_neuronx: str = ""  # torch-neuronx's version there, "" if none (2.9.x: the XLA stack, 2.10+: native)
    neuron_devices: int = 0  # the Neuron device files there (/dev/neuron*)
    upload_via: str = ""  # how the agent went up this time (remote_upload.VIA_*), "" when it was there

    def __post_init__(self) -> None:
        object.__setattr__(self, "missing", tuple(self.missing))  # a list when read back from JSON

    @property
    def timm(self) -> bool:
        return "timm" not in self.missing

    @property
    def site_dir(self) -> str:
        return f"{self.cache_dir}/site"


def agent_dir(bundle: AgentBundle) -> str:
    """The unpacked agent's folder name on the host: the zipapp's name (content hash included) less .pyz."""
    return bundle.name.removesuffix(".pyz")


def _parse(text: str) -> dict[str, str]:
    found = {}
    for line in text.splitlines():  # a chatty login shell may print other lines: only ours count
        if line.startswith("nb-") and "=" in line:
            key, value = line[3:].split("=", 1)
            found[key] = value.strip()
    return found


def inspect_host(transport: paramiko.Transport, profile: HostProfile, bundle: AgentBundle,
                 venv_glob: str = NEURON_VENV_GLOB) -> dict[str, str]:
    """The one remote command: Python choice and version, agent presence, model libraries, torch and pip."""
    result = run_command(transport, ["sh", "-c", _INSPECT_SH, "neuronbench-inspect", profile.python, agent_dir(bundle),
                                     venv_glob, _INSPECT_PY,
                                     " ".join(_MODULES.get(name, name) for name in MODEL_LIBRARIES)])
    found = _parse(result.text())
    if "cache" not in found:
        raise DeployError(f"could not inspect {profile.name}: `sh` did not run there ({result.stderr_line()}); "
                          f"NeuronBench needs a POSIX shell on the host")
    python = found.get("python", "python3")
    if found.get("missing"):
        if profile.python:
            raise DeployError(f"the Python set for {profile.name} ({profile.python!r}) does not exist there; "
                              f"change it with `neuronbench hosts add {profile.name} --python PATH` (after "
                              f"`hosts remove`), or leave it unset to pick one")
        raise DeployError(f"no Python on {profile.name}: {python!r} is not on its PATH and there is no Neuron venv; "
                          f"install python3 (3.8 or newer) there or set the host's --python")
    version = found.get("version")
    if version is None:
        raise DeployError(f"the Python {python} on {profile.name} did not start: {result.stderr_line()}")
    parts = tuple(int(p) for p in version.split("."))
    if parts[:2] < MIN_PYTHON:
        raise DeployError(f"{profile.name} has Python {version} ({found.get('executable') or python}), but the "
                          f"agent needs {MIN_PYTHON[0]}.{MIN_PYTHON[1]} or newer; install a newer python3 there "
                          f"or set --python to one (a Neuron DLAMI has /opt/aws_neuronx_venv_pytorch_*/bin/python)")
    return found


def prepare_host(transport: paramiko.Transport, profile: HostProfile, bundle: AgentBundle,
                 venv_glob: str = NEURON_VENV_GLOB, on_progress: Callable[[str], None] | None = None) -> RemoteSetup:
    """Inspect, and upload the agent if its hash is not there (a missing library is offered by host_libraries)."""
    say = on_progress or (lambda _text: None)
    found = inspect_host(transport, profile, bundle, venv_glob)
    cache = found["cache"]
    agent_path = f"{cache}/agent/{agent_dir(bundle)}"
    python = found.get("executable") or found["python"]
    if found.get("free", "").isdigit():
        problem = low_space_error(profile.name, cache, int(found["free"]))  # before anything is written there
        if problem is not None:
            raise problem
    via = ""
    if found.get("agent") != "present":
        size = bundle.path.stat().st_size
        say(f"uploading the agent ({size // 1024} KiB) to {agent_path}")
        try:
            sent = upload_file(transport, bundle.path, f"{cache}/agent", bundle.name, python, "the agent",
                               profile.name, sha256=bundle.sha256)
        except DeployError as exc:  # e.g. paramiko's "size mismatch in put!" when the disk filled meanwhile
            raise disk_full_error(transport, python, f"{cache}/agent", profile.name, "upload the agent", 2 * size,
                                  f"{exc} {exc.detail or ''}") or exc from None
        via = sent.via
        say(f"uploaded the agent ({size // 1024} KiB) over {via}")
        result = run_command(transport, [python, "-c", _INSTALL_AGENT_PY, sent.path, agent_path])
        if result.code != 0:
            stderr = result.stderr.decode("utf-8", "replace")
            raise disk_full_error(transport, python, f"{cache}/agent", profile.name, "unpack the agent", 10 * size,
                                  stderr) or DeployError(f"could not unpack the agent on {profile.name}: "
                                                         f"{result.stderr_line()}", detail=stderr)
    modules = found.get("missing-libs", "").split(",")
    missing = tuple(name for name in MODEL_LIBRARIES if _MODULES.get(name, name) in modules)
    neuronx, devices = found.get("torch-neuronx", ""), int(found.get("neuron-devices", "0") or 0)
    if OPTIMUM_NEURON in missing and not needs_optimum_neuron(neuronx, devices):
        missing = tuple(name for name in missing if name != OPTIMUM_NEURON)  # not this host's generation path
    return RemoteSetup(python=python, python_version=found["version"], cache_dir=cache, agent_path=agent_path,
                       uploaded=bool(via), missing=missing, torch=found.get("torch", ""), pip=found.get("pip", ""),
                       torch_neuronx=neuronx, neuron_devices=devices, upload_via=via)


def needs_optimum_neuron(torch_neuronx: str, neuron_devices: int) -> bool:
    """Whether the backend neuron generates through optimum-neuron on a Python with this torch-neuronx.

    Only the XLA stack does (torch-neuronx 2.9, SDK <= 2.31); TorchNeuron (native) generates with
    transformers on its ``neuron`` device.  Without a Neuron device neither runs there (``--backend auto``
    picks another backend, ``--backend neuron`` is refused by the agent for that), so nothing is offered.
    """
    return classify("", torch_neuronx, "")[0] == "xla" and neuron_devices > 0
