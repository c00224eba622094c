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


# What Python 3.12-3.14 removed (What's New in Python 3.12, 3.13 and 3.14, "Removed"), and 3.14's
# asyncio.get_event_loop(), which raises without a running loop.  No interpreter of 3.14 can be had here (no
# registry this project reaches has one): this scan stands for it, beside vermin's floor and the 3.13 run
# (tests/agent/test_agent_pythons.py).  SDK 2.33's DLAMI and vLLM DLC run Python 3.14 (Ubuntu 26.04).
REMOVED_MODULES = {"distutils", "imp", "asynchat", "asyncore", "smtpd", "cgi", "cgitb", "crypt", "imghdr", "mailcap",
                   "msilib", "nis", "nntplib", "ossaudiodev", "pipes", "sndhdr", "spwd", "sunau", "telnetlib", "uu",
                   "xdrlib", "lib2to3"}
REMOVED_NAMES = {("ast", "Num"), ("ast", "Str"), ("ast", "Bytes"), ("ast", "NameConstant"), ("ast", "Ellipsis"),
                 ("pkgutil", "find_loader"), ("pkgutil", "get_loader"), ("asyncio", "get_event_loop"),
                 ("asyncio", "get_child_watcher"), ("asyncio", "set_child_watcher"), ("sqlite3", "version"),
                 ("urllib.request", "URLopener"), ("urllib.request", "FancyURLopener"), ("pty", "master_open"),
                 ("pty", "slave_open"), ("importlib.abc", "Traversable"), ("importlib.abc", "ResourceReader")}


def test_nothing_python_3_12_to_3_14_removed_is_used():
    offenders = []
    for path in sorted(AGENT.rglob("*.py")):
        tree = ast.parse(path.read_text())
        where = path.relative_to(REPO)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                offenders += [f"{where}: import {a.name}" for a in node.names
                              if a.name.split(".")[0] in REMOVED_MODULES]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                if node.module.split(".")[0] in REMOVED_MODULES:
                    offenders.append(f"{where}: from {node.module}")
                offenders += [f"{where}: from {node.module} import {a.name}" for a in node.names
                              if (node.module, a.name) in REMOVED_NAMES]
            elif isinstance(node, ast.Attribute):
                owner = ast.unparse(node.value)
                if (owner, node.attr) in REMOVED_NAMES:
                    offenders.append(f"{where}:{node.lineno}: {owner}.{node.attr}")
    assert offenders == []
