"""A map's results: ``map.json`` (every cell of every strategy, every run) and ``map.csv`` (one row per cell).

A cell *recovers* when the server recovered after every trigger in every run (one per
seed), is *metastable* when it recovered in none, and *mixed* otherwise (the edge runs
through it: some seeds tip over, some do not). Its figures are medians over its runs:
time to recover (of the runs that recovered), peak in flight, amplification. Each
cell has an ``agreement`` slot, ``null`` here: where a live run confirms the cell,
it says whether live and simulated verdicts agree.

The *edge* of a strategy, per value of the second axis (or once for a one-axis map), is
where the verdict flips along the first axis, in whichever direction: between a cell that
is metastable and its neighbour that is not (it recovers, or is mixed). ``edge`` is the
metastable cell's value and ``recovers`` the side that recovers: ``below`` when larger
values are worse (a longer freeze, more users: the first value from which every cell on is
metastable), ``above`` when smaller ones are (a ``slow`` cut to a smaller ``capacity``: the
last value up to which every cell is metastable); ``between`` gives the two values the
boundary lies between. A row that flips more than once lists every flip under ``flips``
(``edge`` is then the one at the row's metastable end). A row without a flip has ``edge``
``null`` and says what holds ``across`` it: ``recovers`` or ``metastable``.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from typing import Any

from retrystorm.durations import format_duration
from retrystorm.sim.map.grid import Cell, RunFigures, Task
from retrystorm.sim.map.vary import Axis

RULE = (
    "A run recovers when the server's recovery (in-flight and modelled delay back to steady levels for 5 s) is seen "
    "after every trigger of the run; a cell recovers when every seed's run does, is metastable when none does, and "
    "mixed otherwise. Times are medians over the runs that recovered; peak and amplification medians over all runs."
)


@dataclasses.dataclass(frozen=True, slots=True)
class Mark:
    """A point to show on the map (a published result, an incident), at a value of every axis."""

    label: str
    at: tuple[float, ...]


@dataclasses.dataclass(slots=True)
class MapPlan:
    """What a map runs: the scenario, its axes, the strategies, the seeds, the cells and the runs."""

    name: str
    source: str
    description: str
    axes: list[Axis]
    labels: list[str]
    seeds: list[int]
    horizon_s: float | None
    cells: list[Cell]
    tasks: list[Task]
    marks: list[Mark] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        """The grid in words, for ``--dry-run``."""
        lines = [f"map of {self.name} ({self.source})"]
        lines += [
            f"  {axis.path}: {', '.join(axis.show(value) for value in axis.values)}"
            + (" (log scale)" if axis.scale == "log" else "")
            for axis in self.axes
        ]
        lines.append(
            f"{len(self.cells):,} cells x {len(self.labels)} strategies ({', '.join(self.labels)}) x "
            f"{len(self.seeds)} seed{'s' if len(self.seeds) > 1 else ''} ({', '.join(map(str, self.seeds))}) = "
            f"{len(self.tasks):,} runs; {horizon_text(self.horizon_s)}"
        )
        timeline = self.cells[0].scenario().timeline()
        lines += [f"  trigger at {format_duration(w.start_s)}: {w.describe()} (first cell)" for w in timeline.windows()]
        lines += [f"  mark {mark.label}: {', '.join(a.show(v) for a, v in zip(self.axes, mark.at, strict=True))}"
                  for mark in self.marks]  # fmt: skip
        return "\n".join(lines)

    def choices(self) -> list[str]:
        """How the map was made, in words, for ``map.json`` and the page."""
        return [
            horizon_text(self.horizon_s) + (" (the scenario's own time after it)" if self.horizon_s else ""),
            "Every cell runs the same seeds, so neighbouring cells differ by their values, not by their luck.",
            "The simulator runs each trigger as retrystorm sim run does (docs/guides/simulate.md).",
        ]

    def document(self, figures: Sequence[RunFigures]) -> dict[str, Any]:
        """``map.json`` of the runs' ``figures``."""
        return document(self, figures)


def _median(values: Sequence[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(statistics.median(present), 6) if present else None


def verdict(runs: Sequence[RunFigures]) -> str:
    """``recovers``, ``metastable`` or ``mixed`` (see the module docstring)."""
    recovered = sum(run.server_recovery_s is not None for run in runs)
    return "recovers" if recovered == len(runs) else "metastable" if recovered == 0 else "mixed"


def cell_json(plan: MapPlan, cell: Cell, label: str, runs: Sequence[RunFigures]) -> dict[str, object]:
    """One strategy's cell: where, the verdict, the counts, the medians, each run, the agreement slot."""
    return {
        "strategy": label,
        "at": {axis.path: round(v) if axis.integer else v for axis, v in zip(plan.axes, cell.values, strict=True)},
        "verdict": verdict(runs),
        "runs": len(runs),
        "server_recovered": sum(run.server_recovery_s is not None for run in runs),
        "client_recovered": sum(run.client_recovery_s is not None for run in runs),
        "server_recovery_s": _median([run.server_recovery_s for run in runs]),
        "client_recovery_s": _median([run.client_recovery_s for run in runs]),
        "peak_in_flight": _median([float(run.peak_in_flight) for run in runs]),
        "amplification": _median([run.amplification for run in runs]),
        "agreement": None,
        "seeds": [run.to_json() for run in runs],
    }


def by_strategy(plan: MapPlan, figures: Sequence[RunFigures]) -> dict[str, list[list[RunFigures]]]:
    """Each strategy's runs, grouped per cell in the grid's order."""
    grouped: dict[str, list[list[RunFigures]]] = {label: [[] for _ in plan.cells] for label in plan.labels}
    for run in figures:
        grouped[run.label][run.cell].append(run)
    return grouped


def row_edge(values: Sequence[float], verdicts: Sequence[str]) -> dict[str, object]:
    """The edge of one row of cells along the first axis (see the module docstring)."""
    metastable = [found == "metastable" for found in verdicts]
    flips = []
    for i in range(len(values) - 1):
        if metastable[i] != metastable[i + 1]:
            tipped, side = (i + 1, "below") if metastable[i + 1] else (i, "above")
            flips.append({"edge": values[tipped], "recovers": side, "between": [values[i], values[i + 1]]})
    if not flips:
        return {"edge": None, "across": "metastable" if all(metastable) else "recovers"}
    # the flip at the row's metastable end: the last when it ends metastable (larger is worse), else the first
    chosen = flips[-1] if metastable[-1] else flips[0]
    return {**chosen, "flips": flips} if len(flips) > 1 else chosen


def edges(plan: MapPlan, verdicts: Sequence[str]) -> list[dict[str, object]]:
    """A strategy's edge per row (see the module docstring), from its cells' verdicts in grid order."""
    first = plan.axes[0]
    columns = len(first.values)
    rows = len(verdicts) // columns
    found = []
    for row in range(rows):
        # itertools.product varies the last axis fastest: the first axis is the outer loop
        row_verdicts = [verdicts[column * rows + row] for column in range(columns)]
        entry = row_edge(first.values, row_verdicts)
        if len(plan.axes) > 1:
            second = plan.axes[1]
            entry = {second.path: round(second.values[row]) if second.integer else second.values[row], **entry}
        found.append(entry)
    return found


def document(plan: MapPlan, figures: Sequence[RunFigures]) -> dict[str, Any]:
    """``map.json`` of ``plan`` and its runs' ``figures``."""
    grouped = by_strategy(plan, figures)
    cells = [cell_json(plan, cell, label, grouped[label][cell.index]) for label in plan.labels for cell in plan.cells]
    strategies = []
    for label in plan.labels:
        verdicts = [verdict(grouped[label][cell.index]) for cell in plan.cells]
        counts = {name: verdicts.count(name) for name in ("recovers", "mixed", "metastable")}
        strategies.append({"strategy": label, **counts, "edge": edges(plan, verdicts)})
    return {
        "map": plan.name,
        "scenario": plan.source,
        "description": plan.description,
        "axes": [axis.to_json() for axis in plan.axes],
        "strategies": strategies,
        "seeds": list(plan.seeds),
        "horizon_s": plan.horizon_s,
        "rule": RULE,
        "marks": [
            {"label": mark.label, "at": {axis.path: value for axis, value in zip(plan.axes, mark.at, strict=True)}}
            for mark in plan.marks
        ],
        "choices": plan.choices(),
        "cells": cells,
    }


def csv_rows(document: dict[str, Any]) -> list[dict[str, object]]:
    """``map.csv``: one row per strategy and cell, the axes as columns, the per-run figures left out; a cell
    confirmed live has its agreement as ``live_*`` columns (:func:`retrystorm.sim.map.confirm.agreement`)."""
    rows = []
    for cell in document["cells"]:
        row = {"strategy": cell["strategy"], **cell["at"]}
        row.update({key: value for key, value in cell.items() if key not in ("strategy", "at", "seeds", "agreement")})
        found = cell.get("agreement")
        if found:  # a live run confirmed the cell: its figures as live_* columns (empty in the other rows)
            row.update({f"live_{key}": value for key, value in found.items()})
        else:
            row["agreement"] = None
        rows.append(row)
    return rows


def horizon_text(horizon_s: float | None) -> str:
    """How long each cell runs after its last trigger, in words."""
    if horizon_s is None:
        return "each cell runs for the scenario's load.duration"
    return f"each cell runs until {format_duration(horizon_s)} after its last trigger ends"
