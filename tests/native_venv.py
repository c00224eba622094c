"""The suite's second Python: torch 2.13 (the PyTorch TorchNeuron 2.13.3.0 is built for) without CUDA.

TorchNeuron needs torch >= 2.10 (SDK 2.33 ships the 2.13 and 2.14 families); the main test venv has torch 2.9
(torch-xla's).  PyPI's Linux torch wheel pulls several GB of nvidia-* CUDA packages, and ``--no-deps`` is no
way out: its libtorch_python links libcudnn, libnccl and libcudart directly, so ``import torch`` fails
without them.  The lean way is PyTorch's CPU build, ``torch==2.13.0+cpu`` (about 190 MB, no CUDA), which
this machine kind keeps on disk for Python 3.11 (pip's find-links, see docs/neuron.md); pip takes it for
``torch==2.13.0+cpu``.  Made once under ``.venv-native`` (ignored by git) by ``make test`` or by the first test
that needs it (3 min here on a shared 2-core machine, 38 s of it CPU); ``python tests/native_venv.py`` makes it
by hand.

It is also the suite's transformers 4.56 Python (the main venv has 5.x): ``hf:`` infer, generate and ``serve --server
transformers`` run on it through the real agent (tests/e2e/test_transformers_4_56.py).  ``transformers serve`` needs
the [serving] extra (fastapi, uvicorn, pydantic, openai, accelerate and what they pull: about 15 MB), added as its
own step with its own stamp, so a venv made before it gains the extra without being made again (25 s here).
"""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("NEURONBENCH_NATIVE_VENV", REPO / ".venv-native"))
# The CPU build by its local version: PyPI has no "+cpu" wheels, so where the machine lacks the file pip fails
# at once (a skip with the reason) instead of pulling PyPI's CUDA build and its GBs of nvidia-* wheels.
TORCH = "torch==2.13.0+cpu"
# hf: models on the native stack (pure Python; the main venv's release, so both stacks build the same model).
TRANSFORMERS = "transformers==4.56.2"
STAMP = VENV / (".made-" + TORCH.replace("==", "-") + "-" + TRANSFORMERS.replace("==", "-"))
SERVING = "transformers[serving]==4.56.2"
SERVING_STAMP = VENV / ".made-transformers-serving-4.56.2"


def base_python() -> str:
    """The interpreter the venv is made from: this one's base Python (3.11, the CPU wheel's)."""
    exe = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    return str(exe if exe.exists() else sys.executable)


def native_python() -> tuple[Path | None, str]:
    """``(python, "")`` once the venv works, or ``(None, why)`` when it cannot be made here."""
    python = VENV / "bin" / "python"
    if STAMP.exists() and SERVING_STAMP.exists():
        return python, ""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(str(VENV) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two sessions (xdist, two terminals) make it once
        if not STAMP.exists():
            steps = [[base_python(), "-m", "venv", "--clear", str(VENV)],
                     [str(python), "-m", "pip", "install", "--quiet", TORCH, "numpy", TRANSFORMERS],
                     [str(python), "-c", "import torch; assert not torch.cuda.is_available(); "
                                         "torch.compile(torch.nn.Linear(2, 2), backend='eager')(torch.ones(1, 2))"]]
            why = _run(steps)
            if why:
                return None, why
            STAMP.write_text(TORCH + "\n")
        if not SERVING_STAMP.exists():
            why = _run([[str(python), "-m", "pip", "install", "--quiet", SERVING]])
            if why:
                return None, why
            SERVING_STAMP.write_text(SERVING + "\n")
    return python, ""


def _run(steps: list[list[str]]) -> str:
    """Run each step; the first failure's last line, or "" when all worked."""
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            return f"cannot make the torch 2.13 test venv ({' '.join(step[:4])}): {tail[0]}"
    return ""


# --------------------------------------------------------------------- timm and torchvision on the native stack
# PyPI's torchvision for torch 2.13 (0.28.0) is a CUDA build: its C++ ops (_C.so: nms, roi_align, the detection
# ops) need libtorch_cuda, so they do not load beside torch 2.13.0+cpu, and then ``import torchvision`` dies in
# its own _meta_registrations.py registering a fake for ``torchvision::nms``, an op that was never defined.
# PyTorch's CPU build of torchvision is on download.pytorch.org, which this machine cannot reach.  The
# classification models (all NeuronBench runs) are pure Python and need none of those ops: a two-line schema
# for ``nms``/``qnms``, defined just before torchvision first imports (a .pth in the venv, lazy), lets the
# import finish; the ops still raise if called.  NEURONBENCH_TEST_NO_TORCHVISION_SCHEMA=1 turns it off, and the
# import fails as on a host with a mismatched torchvision (tests/e2e/test_neuron_native.py shows its sentence).
VISION = ["torchvision==0.28.0", "timm==1.0.31", "pillow==13.0.0"]
VISION_STAMP = VENV / (".made-" + "-".join(VISION).replace("==", "-"))
_SCHEMA_HOOK = '''"""Test venv only (tests/native_venv.py): torchvision's nms/qnms schemas, before it imports."""
import importlib.abc
import os
import sys


class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        import torch

        lib = torch.library.Library("torchvision", "FRAGMENT")
        for schema in ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
                       "qnms(Tensor qdets, Tensor scores, float iou_threshold) -> Tensor"):
            try:
                lib.define(schema)
            except RuntimeError:  # a torchvision whose ops did load defined it already
                pass
        sys.modules[__name__ + ".lib"] = lib
        return None


if os.environ.get("NEURONBENCH_TEST_NO_TORCHVISION_SCHEMA") != "1":
    sys.meta_path.insert(0, _Hook())
'''


def native_vision_python() -> tuple[Path | None, str]:
    """The native venv with timm and torchvision added (once: about 15 MB, a few seconds), or why not."""
    python, why = native_python()
    if python is None or VISION_STAMP.exists():
        return python, why
    with open(str(VENV) + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if VISION_STAMP.exists():
            return python, ""
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True).stdout.strip()
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", *VISION],
                              capture_output=True, text=True)
        if done.returncode != 0 or not site:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            return None, f"cannot add timm and torchvision to the torch 2.13 test venv: {tail[0]}"
        Path(site, "_neuronbench_torchvision_schema.py").write_text(_SCHEMA_HOOK)
        Path(site, "_neuronbench_torchvision_schema.pth").write_text("import _neuronbench_torchvision_schema\n")
        check = subprocess.run([str(python), "-c", "import timm, torchvision; torchvision.models.resnet18()"],
                               capture_output=True, text=True)
        if check.returncode != 0:
            tail = (check.stderr or check.stdout).strip().splitlines()[-1:] or ["(no output)"]
            return None, f"timm and torchvision do not import in the torch 2.13 test venv: {tail[0]}"
        VISION_STAMP.write_text("\n".join(VISION) + "\n")
    return python, ""


if __name__ == "__main__":
    made, why = native_vision_python()
    print(made or why)
    sys.exit(0 if made else 1)
