"""A map's ``report.html``: the phase diagram, every cell of every strategy, the marks, how it was made.

Rendered from ``map.json`` (:mod:`retrystorm.sim.map.document`) by the template ``templates/map.html.j2``
with autoescaping on, as the run report is (:mod:`retrystorm.experiment.report.page`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from retrystorm.experiment.report.page import Image, environment
from retrystorm.experiment.report.text import seconds

TEMPLATE = "map.html.j2"


@dataclasses.dataclass(frozen=True, slots=True)
class GridCell:
    """One cell as the table shows it: its text and its verdict (the CSS class)."""

    text: str
    css: str


@dataclasses.dataclass(frozen=True, slots=True)
class GridRow:
    """A row of the table: a value of the second axis and its cells."""

    value: str
    cells: tuple[GridCell, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Grid:
    """A strategy's cells as a table: the first axis across, the second down (highest first)."""

    label: str
    corner: str
    columns: tuple[str, ...]
    rows: tuple[GridRow, ...]


def value_text(axis: Mapping[str, Any], value: float) -> str:
    """An axis value as the page shows it: ``30s``, ``1,000``, ``0.4``."""
    if axis.get("unit") == "s":
        return seconds(float(value))
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


def cell_text(cell: Mapping[str, Any]) -> GridCell:
    """``3s``; ``never``; ``2/3: 5s``."""
    time_s = cell["server_recovery_s"]
    shown = seconds(float(time_s)) if time_s is not None else "never"
    if cell["verdict"] == "mixed":
        shown = f"{cell['server_recovered']}/{cell['runs']}: {shown}"
    return GridCell(shown, str(cell["verdict"]))


def grids(document: Mapping[str, Any]) -> list[Grid]:
    """One table per strategy."""
    axes = document["axes"]
    first = axes[0]
    second = axes[1] if len(axes) > 1 else None
    rows = len(second["values"]) if second else 1
    found = []
    for entry in document["strategies"]:
        label = entry["strategy"]
        cells = [cell for cell in document["cells"] if cell["strategy"] == label]
        table_rows = []
        for row in reversed(range(rows)):
            shown = value_text(second, second["values"][row]) if second else ""
            table_rows.append(
                GridRow(shown, tuple(cell_text(cells[column * rows + row]) for column in range(len(first["values"]))))
            )
        corner = f"{second['path']} \u2193 / {first['path']} \u2192" if second else f"{first['path']} \u2192"
        found.append(Grid(label, corner, tuple(value_text(first, v) for v in first["values"]), tuple(table_rows)))
    return found


def edge_text(axis: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """``between 0.1 and 0.2, recovers above``; ``none on the map: recovers across it`` (a row of ``map.json``'s
    ``edge``: :func:`retrystorm.sim.map.document.row_edge`)."""
    if row.get("edge") is None:
        across = row.get("across")
        return f"none on the map: {across} across it" if across else "none on the map"
    flips = row.get("flips") or [row]
    return "; ".join(_flip_text(axis, flip) for flip in flips)


def _flip_text(axis: Mapping[str, Any], flip: Mapping[str, Any]) -> str:
    between, side = flip.get("between"), flip.get("recovers")
    if not between or side not in ("below", "above"):  # a map.json written before the edge had a direction
        return value_text(axis, flip["edge"])
    low, high = (value_text(axis, value) for value in between)
    return f"between {low} and {high}, recovers {side}"


def summary(document: Mapping[str, Any]) -> list[str]:
    """A line per strategy: how many cells recover, are mixed, stay metastable; where the edge runs."""
    axes = document["axes"]
    lines = []
    for entry in document["strategies"]:
        counts = f"{entry['recovers']} cells recover, {entry['mixed']} mixed, {entry['metastable']} metastable"
        edges = []
        for row in entry["edge"]:
            where = edge_text(axes[0], row)
            if len(axes) > 1:
                edges.append(f"{value_text(axes[1], row[axes[1]['path']])}: {where}")
            else:
                edges.append(where)
        lines.append(f"{entry['strategy']}: {counts}; edge along {axes[0]['path']}: {'; '.join(edges)}")
    return lines


def _marks(document: Mapping[str, Any]) -> list[str]:
    axes = {axis["path"]: axis for axis in document["axes"]}
    return [
        f"{mark['label']}: " + ", ".join(f"{path} {value_text(axes[path], v)}" for path, v in mark["at"].items())
        for mark in document.get("marks") or []
    ]


def how(document: Mapping[str, Any]) -> list[str]:
    """The scenario, the axes, the seeds, the horizon, the rule and the choices, as lines."""
    axes = ", ".join(
        f"{axis['path']}: {len(axis['values'])} values, {value_text(axis, axis['values'][0])} to "
        f"{value_text(axis, axis['values'][-1])}{' (log scale)' if axis['scale'] == 'log' else ''}"
        for axis in document["axes"]
    )
    seeds = ", ".join(str(seed) for seed in document["seeds"])
    return [
        f"scenario: {document['scenario']}",
        f"axes: {axes}",
        f"seeds per cell: {seeds}",
        str(document["rule"]),
        *[str(choice) for choice in document.get("choices") or []],
    ]


def live_lines(document: Mapping[str, Any]) -> list[str]:
    """The live confirmations (``--live``), a line each; none for a map without them."""
    live = document.get("live")
    if not live:
        return []
    axes = {axis["path"]: axis for axis in document["axes"]}
    counts = f"{live['disagree']} disagree, {live['undecided']} undecided"
    lines = [f"{live['agree']} of {live['cells']} cells confirmed live agree with the simulation (server), {counts}"]
    for row in live["runs"]:
        at = ", ".join(f"{path} {value_text(axes[path], value)}" for path, value in row["at"].items())
        head = f"{row['strategy']} at {at} ({row['side']} side, simulated {row['verdict']}): "
        if row.get("error"):
            lines.append(head + f"the live run failed: {row['error']}")
            continue
        parts = []
        for who, name in (("server", "server"), ("client", "users")):
            agrees = row[f"{who}_agrees"]
            word = "agrees" if agrees else "undecided" if agrees is None else "disagrees"
            time_s = row[f"{who}_recovery_s_live"]
            ratio = row[f"{who}_recovery_ratio"]
            shown = f"back after {seconds(float(time_s))}" if time_s is not None else "never back"
            times = f", {ratio:.2f}x the simulated time" if ratio is not None else ""
            parts.append(f"{name} {row[f'{who}_live']} live ({shown}{times}): {word}")
        lines.append(head + "; ".join(parts) + (f" (run folder {row['folder']})" if row.get("folder") else ""))
    return [*lines, str(live["rule"])]


def render(document: Mapping[str, Any], image: Image, extra: Sequence[str] = ()) -> str:
    """The whole page."""
    template = environment().get_template(TEMPLATE)
    return template.render(
        title=str(document["map"]),
        description=str(document.get("description") or ""),
        summary=summary(document),
        image=image,
        grids=grids(document),
        marks=_marks(document),
        live=live_lines(document),
        how=[*how(document), *extra],
    )
