"""Render a registry (strategies, budgets, models) as a table of names and parameters."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from rich.markup import escape
from rich.table import Table

from retrystorm.spec import Registry, describe_params


def registry_table(registry: Registry[Any], title: str, *, include: Callable[[type[Any]], bool] | None = None) -> Table:
    """One row per registered class (those ``include`` accepts): name, first docstring line, parameters."""
    table = Table(title=title, show_lines=True, title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("what it does")
    table.add_column("parameters: key=default  meaning (accepted)")
    for name, cls in registry.items():
        if include is not None and not include(cls):
            continue
        summary = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ").replace("``", "")
        params = "\n".join(f"{key}={default}  {help_}" for key, default, help_ in describe_params(cls))
        table.add_row(escape(name), escape(summary), escape(params) or "-")
    return table
