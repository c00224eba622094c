"""DESIGN.md §2's import rules and the project's lint rules hold for the whole tree."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_import_contracts_are_kept():
    proc = subprocess.run([str(BIN / "lint-imports")], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "BROKEN" not in proc.stdout


def test_ruff_is_clean():
    proc = subprocess.run([str(BIN / "ruff"), "check", "app", "remote_agent", "tests", "bench"],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_qt_is_imported_only_by_the_ui_package():
    offenders = []
    for path in (REPO / "app").rglob("*.py"):
        relative = path.relative_to(REPO).as_posix()
        if relative.startswith("app/ui/"):
            continue
        for line in path.read_text().splitlines():
            stripped = line.strip()
            qt = stripped.startswith(("import PySide6", "from PySide6", "import pyqtgraph", "from pyqtgraph"))
            # DESIGN.md §2: the PDF writer may use QtGui lazily, inside a function.
            lazy_in_pdf = relative.startswith("app/reports/pdf") and line.startswith(" ")
            if qt and not lazy_in_pdf:
                offenders.append(f"{relative}: {stripped}")
    assert offenders == []
