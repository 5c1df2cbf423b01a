"""The dashboards as shipped: the generated JSON files installed with the package.

``dashboards/grafana/dashboards/<uid>.json`` is what Grafana's file provider loads and
what ``retrystorm dashboards push`` uploads. Reading it needs no Grafana library (the
foundation SDK is only for generating it: :mod:`retrystorm.dashboards.files`).
"""

from __future__ import annotations

import importlib.resources
import json
from importlib.resources.abc import Traversable
from typing import Any

#: The folder of the shipped dashboard files, inside the installed package.
SHIPPED_DASHBOARDS: Traversable = importlib.resources.files("retrystorm.dashboards") / "grafana" / "dashboards"


def shipped_dashboards() -> dict[str, dict[str, Any]]:
    """Dashboard uid -> JSON model, for every shipped dashboard file, sorted by file name."""
    models: dict[str, dict[str, Any]] = {}
    for entry in sorted(SHIPPED_DASHBOARDS.iterdir(), key=lambda item: item.name):
        if entry.name.endswith(".json"):
            model: dict[str, Any] = json.loads(entry.read_text(encoding="utf-8"))
            models[str(model.get("uid") or entry.name.removesuffix(".json"))] = model
    return models
