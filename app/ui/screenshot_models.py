"""Screenshots of issue 14's views (``python -m app.ui.screenshots``): the model field with each source,
and live views of real tiny runs on this computer of a Hugging Face config (tokens/s) and of a user's
file whose trace is wrong (the numerical check's marks).

A mixin of ``app.ui.screenshots.Shots`` (which had grown past 500 lines): it uses that class's
``window`` and ``save``, and the waiting steps of ``app.ui.screenshot_steps``, below both modules.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QPainter, QPixmap
from PySide6.QtWidgets import QSplitter

from app.ui.screenshot_steps import run_from_button, settle

MODELS = Path(__file__).resolve().parents[2] / "tests" / "data" / "models"


class ModelShots:
    """``shot_*`` methods for ``Shots``; numbered after the views they follow."""

    out: Path
    saved: list[Path]

    def shot_24_model_sources(self) -> None:
        """The workload form with each model source (and a folder without config.json), side by side."""
        window = self.window(probe_hosts=False)  # type: ignore[attr-defined]
        form = window.workload
        forms = (
            ("tiny-train", {}),
            ("seed-infer-resnet50", {}),
            ("seed-infer-bert-large", {}),
            ("", {"preset": "", "workload": "train", "model": f"file:{MODELS / 'two_tower.py'}", "task": "",
                  "seq_lens": "", "model_args": "hidden=16", "batch_sizes": "8", "steps": 50, "warmup": 5}),
            ("", {"preset": "", "workload": "infer", "model": f"hf:{MODELS}", "task": "classification",
                  "model_args": "", "seq_lens": "128,512", "batch_sizes": "1,4"}),
        )
        grabs = []
        for preset, values in forms:
            if preset:
                form.apply_preset(preset)
            else:
                form.set_form_values(values)
            settle(150)
            grabs.append(form.grab())
        gap = 16
        sheet = QPixmap(sum(g.width() for g in grabs) + gap * (len(grabs) + 1),
                        max(g.height() for g in grabs) + 2 * gap)
        sheet.fill(form.palette().window().color())
        painter = QPainter(sheet)
        x = gap
        for grab in grabs:
            painter.drawPixmap(x, gap, grab)
            x += grab.width() + gap
        painter.end()
        path = self.out / "24-model-sources.png"
        if not sheet.save(str(path)):
            raise OSError(f"could not write {path}")
        self.saved.append(path)
        window.close()

    def _model_run(self, model: str, name: str, tab: str, **values) -> None:
        window = self.window(probe_hosts=False)  # type: ignore[attr-defined]
        form = {"preset": "", "workload": "infer", "model": model, "model_args": "", "backend": "cpu",
                "precision": "fp32", "warmup": 3, "min_iters": 50, "duration": 1.5, "task": "", "seq_lens": "",
                "check": True}
        form.update(values)
        window.workload.set_form_values(form)
        run_from_button(window, timeout=600)
        view = window.runs.views[0]
        view.tabs.setCurrentIndex([view.tabs.tabText(i) for i in range(view.tabs.count())].index(tab))
        view.findChild(QSplitter).setSizes([480, 205])  # room for every row of the sweep
        self.save(window, name)  # type: ignore[attr-defined]

    def shot_25_live_hf(self) -> None:
        """A real tiny BERT (tests/data/models/tiny-bert) traced on the cpu backend: batch 1 and 4 at lengths 16
        and 32, a latency series each, tokens/s beside samples/s, the Sweep tab."""
        self._model_run(f"hf:{MODELS / 'tiny-bert'}", "25-live-hf-tokens.png", "Sweep", task="classification",
                        seq_lens="16,32", batch_sizes="1,4")

    def shot_26_live_check_failed(self) -> None:
        """A real run of tests/data/models/branchy.py, whose trace keeps one branch of a data-dependent `if`:
        the check against eager marks the artefacts that give wrong answers (banner, legend, Sweep rows)."""
        self._model_run(f"file:{MODELS / 'branchy.py'}", "26-live-check-failed.png", "Sweep", batch_sizes="1,4,16")
