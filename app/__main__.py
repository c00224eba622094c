"""Composition root: ``neuronbench`` alone opens the desktop app; any subcommand runs the CLI."""
from __future__ import annotations

import sys
from collections.abc import Sequence


def _gui_data_dir(args: list[str]) -> tuple[bool, str | None]:
    """(open the GUI?, its --data-dir): the GUI takes no arguments but ``--data-dir PATH``."""
    if not args:
        return True, None
    if len(args) == 2 and args[0] == "--data-dir":
        return True, args[1]
    if len(args) == 1 and args[0].startswith("--data-dir="):
        return True, args[0].split("=", 1)[1]
    return False, None


def open_desktop_app(data_dir: str | None) -> int:
    try:
        from app.ui.app import display_problem, run_gui
    except ImportError as exc:
        print(f"neuronbench: error: the desktop app needs PySide6-Essentials and pyqtgraph ({exc}): install them "
              "with `make app` or `pip install 'neuronbench[app]'`; the CLI works without them "
              "(neuronbench --help)", file=sys.stderr)
        return 1
    problem = display_problem()
    if problem:
        print(f"neuronbench: error: {problem}", file=sys.stderr)
        return 1
    return run_gui(data_dir)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    gui, data_dir = _gui_data_dir(args)
    if gui:
        return open_desktop_app(data_dir)
    from app.cli import main as cli_main

    return cli_main(args)


if __name__ == "__main__":
    sys.exit(main())
