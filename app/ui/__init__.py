"""The desktop app: the ONLY package that imports PySide6 and pyqtgraph (DESIGN.md §2).

It drives the same services as the CLI; service callbacks arrive on worker
threads and reach widgets only through ``bridge.py``'s queued signals.
"""

# Before any widget exists: see qt_compat (PySide6 6.12.0 on Python < 3.12 drains None's refcount).
from app.ui import qt_compat as _qt_compat  # noqa: F401
