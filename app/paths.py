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
    def local_agent_home(self) -> Path:
        """The ``local`` host's agent cache (run directories), as ~/.cache/neuronbench is on a remote host."""
        return self.cache / "local-agent"


def resources_dir() -> Path:
    """``resources/`` (icons, price book, ...): beside the ``app`` package in a checkout, inside a frozen bundle."""
    bundle = getattr(sys, "_MEIPASS", None)  # PyInstaller unpacks data files here
    root = Path(bundle) if bundle else Path(__file__).resolve().parent.parent
    return root / "resources"
