"""Where NeuronBench keeps its files: data (runs database), config (hosts), cache (agent builds).

``--data-dir PATH`` or ``NEURONBENCH_DATA_DIR`` puts all three under one folder
(tests and portable installs); otherwise platformdirs' per-user locations.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import platformdirs

APP_NAME = "neuronbench"
ENV_DATA_DIR = "NEURONBENCH_DATA_DIR"


def resources_dir() -> Path:
    """The shipped ``resources/`` folder (price book, report assets).

    It sits next to the ``app`` package in a source checkout or an editable install,
    under PyInstaller's unpack folder in a frozen build, and under
    ``<prefix>/share/neuronbench`` for a wheel install (pyproject's data-files).
    """
    candidates = [Path(__file__).resolve().parent.parent / "resources"]
    if getattr(sys, "_MEIPASS", None):
        candidates.append(Path(sys._MEIPASS) / "resources")
    candidates.append(Path(sys.prefix) / "share" / APP_NAME / "resources")
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    return candidates[0]


@dataclass(frozen=True)
class AppPaths:
    data: Path
    config: Path
    cache: Path

    @classmethod
    def resolve(cls, data_dir: str | os.PathLike[str] | None = None) -> AppPaths:
        root = data_dir or os.environ.get(ENV_DATA_DIR)
        if root:
            base = Path(root).expanduser().resolve()
            paths = cls(base / "data", base / "config", base / "cache")
        else:
            paths = cls(Path(platformdirs.user_data_dir(APP_NAME)), Path(platformdirs.user_config_dir(APP_NAME)),
                        Path(platformdirs.user_cache_dir(APP_NAME)))
        for folder in (paths.data, paths.config, paths.cache):
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        return paths

    @property
    def agent_builds(self) -> Path:
        """Built agent zipapps, one per content hash."""
        return self.cache / "agent"

    @property
    def runs_db(self) -> Path:
        """The run store (SQLite): every run, its events and telemetry."""
        return self.data / "runs.sqlite3"

    @property
    def prices_file(self) -> Path:
        """Prices the user set and prices fetched by ``prices refresh`` (JSON, dated)."""
        return self.data / "prices.json"

    @property
    def local_agent_home(self) -> Path:
        """The ``local`` host's agent cache (run directories), as ~/.cache/neuronbench is on a remote host."""
        return self.cache / "local-agent"

