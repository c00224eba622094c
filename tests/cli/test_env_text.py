"""`probe` and `hosts test` as text: the host's model libraries, each with its version or N/A."""
from __future__ import annotations

from app.cli.text import format_env


def test_the_probe_text_shows_transformers_beside_torch_torchvision_and_timm():
    env = {"hostname": "g5", "python": {"version": "3.10.12", "executable": "/usr/bin/python3"},
           "torch": "2.9.0+cu128", "torchvision": "0.24.0+cu128", "timm": "1.0.31", "transformers": None,
           "missing": {"transformers": "not installed for /usr/bin/python3"}}
    lines = format_env("g5", env).splitlines()
    libraries = [line.split() for line in lines if line.split()[0] in ("torch", "torchvision", "timm", "transformers")]
    assert libraries == [["torch", "2.9.0+cu128"], ["torchvision", "0.24.0+cu128"], ["timm", "1.0.31"],
                         ["transformers", "N/A"]]
    assert "    transformers: not installed for /usr/bin/python3" in lines
