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


def _import_cycles(graph) -> list[list[str]]:
    """Strongly connected sets of two or more modules (Tarjan's algorithm, iteratively)."""
    edges = {m: {i for i in graph.find_modules_directly_imported_by(m)
                 # Importing one's own package (its __init__) is how packages work, not a cycle between layers.
                 if not m.startswith(i + ".")} for m in graph.modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    cycles.append(sorted(members))
    return cycles


def test_no_module_of_the_app_or_the_agent_imports_itself_round_a_cycle():
    # Every import counts: at module level, inside functions and under TYPE_CHECKING (an import hidden in a
    # function still ties the two layers together).  The layering must read top-down.
    import grimp

    graph = grimp.build_graph("app", "remote_agent", cache_dir=None)
    cycles = _import_cycles(graph)
    described = []
    for members in cycles:
        chain = graph.find_shortest_chain(members[1], members[0]) or ()
        back = graph.find_shortest_chain(members[0], members[1]) or ()
        described.append(f"{', '.join(members)}: {' -> '.join(back)} and {' -> '.join(chain)}")
    assert cycles == [], "import cycles:\n" + "\n".join(described)
