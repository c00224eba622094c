"""Render resources/icons/neuronbench.svg to the PNG sizes a Linux desktop (and the frozen app) look for.

    python packaging/render_icons.py        # writes resources/icons/neuronbench-<size>.png
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parents[1] / "resources" / "icons"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def main() -> int:
    _app = QGuiApplication(sys.argv[:1])
    renderer = QSvgRenderer(str(ICONS / "neuronbench.svg"))
    if not renderer.isValid():
        print("neuronbench.svg is not a valid SVG", file=sys.stderr)
        return 1
    for size in SIZES:
        image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
        image.fill(Qt.GlobalColor.transparent)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        path = ICONS / f"neuronbench-{size}.png"
        image.save(str(path))
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
