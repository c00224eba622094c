"""The real packages' published wheels the contract tests read, fetched once into a cache and checked by SHA-256.

``pip download --no-deps NAME==VERSION`` (PyPI; a wheel of a pure-Python package is small: optimum-neuron 0.4.5 is
548 kB) into ``.contract-wheels/`` (ignored by git; ``NEURONBENCH_CONTRACT_WHEELS`` moves it).  ``make test`` fetches
them in its install step (``python tests/contracts/real_packages.py``), so the tests run offline afterwards; without
the cache and without PyPI a contract test is skipped with the reason, never passed.  The SHA-256 pins the exact
bytes read: a re-published or tampered wheel fails instead of silently moving the contract.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
CACHE = Path(os.environ.get("NEURONBENCH_CONTRACT_WHEELS", REPO / ".contract-wheels"))
# (distribution, version) -> (wheel file name, sha256 from PyPI's listing of that file)
WHEELS = {
    ("optimum-neuron", "0.4.5"): ("optimum_neuron-0.4.5-py3-none-any.whl",
                                  "fde44f493e73e0bd558ba03f20034db05e7777db865de343c528538afd98ffa9"),
}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def wheel(name: str, version: str) -> tuple[Path | None, str]:
    """``(path, "")`` of the verified wheel, fetched on first use; ``(None, why)`` when it cannot be had here."""
    file_name, digest = WHEELS[(name, version)]
    path = CACHE / file_name
    if path.exists() and _sha256(path) == digest:
        return path, ""
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers fetch it once
        if not (path.exists() and _sha256(path) == digest):
            try:  # offline, pip gives up after one short retry instead of its default minutes
                done = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                                       "--no-cache-dir", "--retries", "1", "--timeout", "20", "--only-binary", ":all:",
                                       "--dest", str(CACHE), f"{name}=={version}"],
                                      capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                return None, f"cannot fetch {name} {version}'s wheel from PyPI into {CACHE}: pip took over 120 s"
            if done.returncode != 0 or not path.exists():
                tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
                return None, (f"cannot fetch {name} {version}'s wheel from PyPI into {CACHE} (offline? `make test` "
                              f"fetches it in its install step): {tail[0]}")
    found = _sha256(path)
    if found != digest:
        raise AssertionError(f"{path} has SHA-256 {found}, not the {digest} PyPI published for {name} {version}: "
                             f"delete it and fetch it again")
    return path, ""


if __name__ == "__main__":
    failed = False
    for (name, version) in WHEELS:
        made, why = wheel(name, version)
        print(made or why)
        failed |= made is None
    sys.exit(1 if failed else 0)
