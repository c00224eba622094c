"""Reports: a comparison of stored runs as HTML, PDF, CSV or JSON (imports app.core only; Qt only in pdf.py)."""
from __future__ import annotations

FORMATS = ("html", "pdf", "csv", "json")
