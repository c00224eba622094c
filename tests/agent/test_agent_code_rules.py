"""The agent runs on bare Python >= 3.8 hosts: stdlib-only at module level, no newer syntax."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
AGENT = REPO / "remote_agent"


def _module_level_imports(tree: ast.Module):
    """Imports executed when the module loads (top level, and inside top-level try/if)."""
    for node in tree.body:
        blocks = [node]
        if isinstance(node, (ast.Try, ast.If)):
            blocks = list(ast.walk(node))
        for inner in blocks:
            if isinstance(inner, ast.Import):
                yield from (alias.name for alias in inner.names)
            elif isinstance(inner, ast.ImportFrom) and inner.level == 0 and inner.module:
                yield inner.module


def test_agent_modules_import_only_the_stdlib_and_themselves_at_load_time():
    offenders = []
    for path in sorted(AGENT.rglob("*.py")):
        for name in _module_level_imports(ast.parse(path.read_text())):
            top = name.split(".")[0]
            if top not in sys.stdlib_module_names and top not in ("remote_agent", "__future__"):
                offenders.append(f"{path.relative_to(REPO)}: {name}")
    assert offenders == []


def test_every_agent_module_postpones_annotations():
    missing = [str(p.relative_to(REPO)) for p in AGENT.rglob("*.py")
               if p.read_text().strip() and "from __future__ import annotations" not in p.read_text()
               and p.name != "__init__.py"]
    assert missing == []


def test_vermin_finds_nothing_newer_than_python_3_8():
    proc = subprocess.run([str(Path(sys.executable).with_name("vermin")), "-t=3.8-", "--no-tips", "--violations",
                           "--eval-annotations", str(AGENT)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
