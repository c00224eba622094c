"""JSON report: the report document itself, versioned ``neuronbench.report/1`` (missing values are null)."""
from __future__ import annotations

import json
from typing import Any


def render_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
