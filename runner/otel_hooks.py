"""How ``retrystorm run`` wraps a run in an OpenTelemetry export (:mod:`retrystorm.runner.otel_export`)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from retrystorm.console import err
from retrystorm.otel import OtelSettings, warn_if_unreachable
from retrystorm.runner.orchestrate import Stack
from retrystorm.runner.otel_export import ExportingSource, OtelExport, labels_in_order
from retrystorm.runner.plan import Plan


def run_exported(
    plan: Plan, stack: Stack, folder: Path, options: Any, *, settings: OtelSettings, run_plan: Callable[..., int]
) -> int:
    """``run_plan`` with every reading exported, then a span per trigger window; the export closed whatever happens."""
    warning = warn_if_unreachable(settings)
    if warning is not None:
        err.print(f"retrystorm run: {warning}", markup=False, soft_wrap=True)
    export = OtelExport(settings, plan.scenario.name)
    labels = [strategy.spec.label for strategy in plan.strategies]
    exporting = dataclasses.replace(stack, metrics=ExportingSource(stack.metrics, export, labels_in_order(labels)))
    try:
        status = run_plan(plan, exporting, folder, options)
        results = folder / "results.json"
        if results.is_file():
            export.windows(json.loads(results.read_text(encoding="utf-8")))
        return status
    finally:
        export.close()
