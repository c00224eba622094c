"""`python -m app.ui.screenshots` renders the views to PNG offscreen (the views fed by recorded runs here;
the ones fed by real runs are rendered for review: docs/app.md, "Screenshots and the frozen app")."""
from __future__ import annotations

import subprocess
import sys

import pytest
from PySide6.QtGui import QImage

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def test_the_views_render_to_pngs_that_show_something(tmp_path, cli_env):
    out = subprocess.run([sys.executable, "-m", "app.ui.screenshots", str(tmp_path), "--only",
                          "02,05,06,08,11,15,21,22,24,27"], capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={**cli_env, "QT_QPA_PLATFORM": "offscreen"})
    assert out.returncode == 0, out.stderr[-3000:]
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert names == ["02-validation.png", "05-live-telemetry.png", "06-side-by-side.png", "08-dark-palette.png",
                     "11-hosts.png", "12-host-editor.png", "13-host-key.png", "14-changed-host-key.png",
                     "15-ec2-hosts.png", "16-ec2-host-editor.png", "17-launch-confirm.png", "21-live-cpu-2vcpu.png",
                     "22-live-cpu-192vcpu.png", "24-model-sources.png", "27-live-trn1-32xlarge-finished.png"]
    windows = names[:5] + ["15-ec2-hosts.png", "21-live-cpu-2vcpu.png", "22-live-cpu-192vcpu.png",
                           "27-live-trn1-32xlarge-finished.png"]
    for name in windows:
        image = QImage(str(tmp_path / name))
        assert (image.width(), image.height()) == (1440, 900)
        # not a blank window: many distinct colours (text, charts, the heat strip)
        colours = {image.pixel(x, y) for x in range(0, 1440, 12) for y in range(0, 900, 12)}
        assert len(colours) > 40, name
    for name in [n for n in names if n not in windows]:  # the dialogs: their own size, not blank
        image = QImage(str(tmp_path / name))
        assert image.width() > 300 and image.height() > 150, name
        assert len({image.pixel(x, y) for x in range(0, image.width(), 4) for y in range(0, image.height(), 4)}) > 10
    dark = QImage(str(tmp_path / "08-dark-palette.png"))
    assert dark.pixelColor(700, 450).lightness() < 128 or dark.pixelColor(10, 450).lightness() < 128
