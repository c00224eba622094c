"""A host Python that lacks a model library, and a local package index, for the install offers' tests.

The "host" is a real venv (``python -m venv --without-pip``) whose one ``.pth`` line names a folder of
symlinks to this test environment's site-packages, every entry but the hidden libraries': it has torch,
pip and the rest, and ``import transformers`` fails there as on a host that never installed it.  The
index is a folder of wheels rebuilt from this environment's installed distributions (their RECORD lists
every file), which pip on the host reads with ``--no-index --find-links`` (PIP_NO_INDEX / PIP_FIND_LINKS,
as a host behind a local mirror would set them): nothing reaches the network.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path


def _shared_site() -> Path:
    """The site-packages that holds torch: this venv's own, or the one its .pth file shares."""
    return Path(metadata.distribution("torch").locate_file(""))


def python_without(root: Path, hidden: tuple[str, ...], older: dict[str, str] | None = None) -> Path:
    """A venv in ``root`` seeing every installed package but the distributions (and modules) named in ``hidden``.

    ``older`` (distribution -> version): those look installed in that version to pip and importlib.metadata
    (their dist-info is copied under the older name and version), as on a host that installed them long ago.
    """
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    farm = root / "site-packages"
    farm.mkdir()
    for entry in _shared_site().iterdir():
        stem = entry.name.split("-")[0].lower()
        if stem in hidden or entry.suffix == ".pth":
            continue
        (farm / entry.name).symlink_to(entry)
    for name, version in (older or {}).items():
        current = next(farm.glob(f"{name}-*.dist-info"))
        aged = farm / f"{name}-{version}.dist-info"
        shutil.copytree(current.resolve(), aged)
        current.unlink()
        meta = aged / "METADATA"
        meta.write_text(re.sub(r"(?m)^Version: .*$", f"Version: {version}", meta.read_text(), count=1))
    purelib = next((root / "venv" / "lib").glob("python*/site-packages"))
    (purelib / "_test_shared.pth").write_text(f"{farm}\n")
    return root / "venv" / "bin" / "python"


def wheel_from_installed(name: str, index: Path) -> Path:
    """``name``'s installed distribution packed again as a wheel in ``index`` (stored, not deflated: it is fast)."""
    dist = metadata.distribution(name)
    tag = next(line.split(":", 1)[1].strip() for line in (dist.read_text("WHEEL") or "").splitlines()
               if line.startswith("Tag:"))
    target = index / f"{name}-{dist.version}-{tag}.whl"
    index.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", zipfile.ZIP_STORED) as archive:
        for file in dist.files or []:
            if "__pycache__" in file.parts or ".." in file.parts or file.suffix == ".pyc":
                continue
            archive.write(dist.locate_file(file), file.as_posix())
    return target


def decoy_wheel(index: Path, name: str, version: str, requires: str) -> Path:
    """A newer release of ``name`` that requires ``requires``: what PyPI holds next to the matching one."""
    dist_info = f"{name}-{version}.dist-info"
    target = index / f"{name}-{version}-py3-none-any.whl"
    index.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w") as archive:
        archive.writestr(f"{name}/__init__.py", f"__version__ = {version!r}\n")
        archive.writestr(f"{dist_info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                                  f"Requires-Dist: {requires}\n")
        archive.writestr(f"{dist_info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                                               "Tag: py3-none-any\n")
        archive.writestr(f"{dist_info}/RECORD", "")
    return target
