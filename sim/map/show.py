"""A map on the terminal: a table per strategy, the first axis across, the second down."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from retrystorm.experiment.report.map_page import grids, summary

STYLES = {"recovers": "green", "mixed": "yellow", "metastable": "bold red"}


def print_map(document: Mapping[str, Any], console: Console) -> None:
    """Each strategy's cells (time to recover, ``never``, ``k/n``) and the edge, one line each."""
    if not console.is_terminal:
        console = Console(file=console.file, width=160, highlight=False)
    cells_of = {entry.label: entry for entry in grids(document)}
    for entry in document["strategies"]:
        grid = cells_of[entry["strategy"]]
        table = Table(title=escape(grid.label), title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column(escape(grid.corner), justify="right")
        for column in grid.columns:
            table.add_column(escape(column), justify="right")
        for row in grid.rows:
            table.add_row(escape(row.value), *(f"[{STYLES[cell.css]}]{escape(cell.text)}[/]" for cell in row.cells))
        console.print(table)
    for line in summary(document):
        console.print(escape(line))
