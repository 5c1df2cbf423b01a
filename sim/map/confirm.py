"""Live confirmation of a map (``retrystorm map --live N``): which cells to run live, and whether they agree.

Pure: ``map.json`` in, plain data out; the live runs themselves are the runner's
(:mod:`retrystorm.runner.map_live`).

*Which cells.* A strategy's *boundary* is every pair of neighbouring cells (one step
along one axis) of which one recovers and the other does not (metastable or mixed).
Pairs along the first axis come first, row by row (they are the edge the map draws),
then pairs along the second. A strategy's picks walk those pairs in spread order (the
middle pair, then the first, then the quarters, ...: :func:`spread`), taking the
tipping side of the first pair, the recovering side of the next, and so on (the other
side when that cell is already taken), so that a few picks cover the whole boundary
from both sides; a second walk takes the sides left. ``N`` picks in all: one per strategy in turn, in the map's order of
strategies, until ``N`` or every boundary cell is taken. A strategy whose cells all
recover, or none, has no boundary and no pick.

*Agreement.* A live run of a cell gives a verdict for the server (its recovery seen
after every trigger, as the map's rule) and for the users; each *agrees* when it is the
simulated verdict, and is ``null`` when the simulation is ``mixed`` there (some seeds
tipped over: either live verdict is one the simulator saw). The *ratio* of times to
recover is ``live / simulated`` (``null`` unless both recovered).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

RECOVERS = "recovers"
TIPS = "tips"  # metastable or mixed: the side of the boundary that did not recover in every seed


@dataclasses.dataclass(frozen=True, slots=True)
class LivePick:
    """A cell to run live: the strategy, the cell's index in the grid, its side, the cell across the boundary."""

    strategy: str
    cell: int
    side: str
    across: int


def grid_shape(document: Mapping[str, Any]) -> tuple[int, int]:
    """(values of the first axis, values of the second or 1): the grid's index is ``i0 * rows + i1``."""
    axes = document["axes"]
    return len(axes[0]["values"]), len(axes[1]["values"]) if len(axes) > 1 else 1


def strategy_cells(document: Mapping[str, Any], label: str) -> list[Mapping[str, Any]]:
    """A strategy's cells in grid order."""
    return [cell for cell in document["cells"] if cell["strategy"] == label]


def boundary_pairs(verdicts: Sequence[str], shape: tuple[int, int]) -> list[tuple[int, int]]:
    """``(recovering cell, tipping cell)`` for each pair of neighbours on either side (module docstring)."""
    columns, rows = shape
    pairs = []
    steps = [(i0 * rows + i1, (i0 + 1) * rows + i1) for i1 in range(rows) for i0 in range(columns - 1)]
    steps += [(i0 * rows + i1, i0 * rows + i1 + 1) for i0 in range(columns) for i1 in range(rows - 1)]
    for a, b in steps:
        a_recovers, b_recovers = verdicts[a] == RECOVERS, verdicts[b] == RECOVERS
        if a_recovers != b_recovers:
            pairs.append((a, b) if a_recovers else (b, a))
    return pairs


def spread(count: int) -> list[int]:
    """``0 .. count - 1`` in an order that spreads any prefix over the range: the middle, then the middle of
    each half, of each quarter, ... (breadth first)."""
    order: list[int] = []
    spans = [(0, count)]
    while spans:
        low, high = spans.pop(0)
        if low < high:
            middle = (low + high) // 2
            order.append(middle)
            spans += [(low, middle), (middle + 1, high)]
    return order


def strategy_picks(label: str, verdicts: Sequence[str], shape: tuple[int, int]) -> list[LivePick]:
    """Every boundary cell of one strategy, in the order it is picked (module docstring)."""
    pairs = boundary_pairs(verdicts, shape)
    order = spread(len(pairs))
    picks: list[LivePick] = []
    taken: set[int] = set()
    for index in [*order, *order]:  # a side of each pair first, then the other sides left
        recovering, tipping = pairs[index]
        wanted = [(TIPS, tipping, recovering), (RECOVERS, recovering, tipping)]
        if len(picks) % 2:
            wanted.reverse()
        for side, cell, across in wanted:
            if cell not in taken:
                taken.add(cell)
                picks.append(LivePick(label, cell, side, across))
                break
    return picks


def choose_live_cells(document: Mapping[str, Any], count: int) -> list[LivePick]:
    """``count`` cells (at most) to confirm live, along each strategy's boundary, strategies in turn."""
    shape = grid_shape(document)
    lists = []
    for entry in document["strategies"]:
        label = entry["strategy"]
        lists.append(strategy_picks(label, [cell["verdict"] for cell in strategy_cells(document, label)], shape))
    chosen: list[LivePick] = []
    for round_ in range(max((len(found) for found in lists), default=0)):
        for found in lists:
            if round_ < len(found) and len(chosen) < count:
                chosen.append(found[round_])
    return chosen


def sim_verdict(recovered: int, runs: int) -> str:
    """``recovers`` when every seed did, ``metastable`` when none did, ``mixed`` otherwise."""
    return RECOVERS if recovered == runs else "metastable" if recovered == 0 else "mixed"


def _ratio(live: float | None, simulated: float | None) -> float | None:
    if live is None or simulated is None or simulated <= 0:
        return None
    return round(live / simulated, 6)


def agreement(sim_cell: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """How a live run of a cell compares with its simulation (module docstring).

    ``live`` holds ``server_recovery_s`` and ``client_recovery_s`` (``None``: not seen
    after every trigger) and, optionally, ``folder`` (the live run's) and ``error``
    (the run could not go on: nothing to compare).
    """
    runs = int(sim_cell["runs"])
    found: dict[str, Any] = {"side": live.get("side"), "folder": live.get("folder")}
    if live.get("error"):
        return {**found, "error": live["error"], "agrees": None}
    for who in ("server", "client"):
        simulated = sim_verdict(int(sim_cell[f"{who}_recovered"]), runs)
        time_s = live.get(f"{who}_recovery_s")
        seen = RECOVERS if time_s is not None else "metastable"
        found[f"{who}_live"] = seen
        found[f"{who}_simulated"] = simulated
        found[f"{who}_agrees"] = None if simulated == "mixed" else seen == simulated
        found[f"{who}_recovery_s_live"] = None if time_s is None else round(float(time_s), 6)
        found[f"{who}_recovery_ratio"] = _ratio(time_s, sim_cell[f"{who}_recovery_s"])
    found["agrees"] = found["server_agrees"]
    return found


def with_agreements(
    document: Mapping[str, Any], picks: Sequence[LivePick], lives: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``document`` with each confirmed cell's ``agreement`` filled and a ``live`` summary of every pick."""
    cells = [dict(cell) for cell in document["cells"]]
    labels = [entry["strategy"] for entry in document["strategies"]]
    per_strategy = len(cells) // max(1, len(labels))  # cells are strategy by strategy, each in grid order
    rows = []
    for pick, live in zip(picks, lives, strict=True):
        position = labels.index(pick.strategy) * per_strategy + pick.cell
        found = agreement(cells[position], {**live, "side": pick.side})
        cells[position]["agreement"] = found
        rows.append({"strategy": pick.strategy, "at": cells[position]["at"], "verdict": cells[position]["verdict"],
                     **found})  # fmt: skip
    decided = [row["agrees"] for row in rows if row.get("agrees") is not None]
    summary = {
        "cells": len(rows),
        "agree": sum(decided),
        "disagree": len(decided) - sum(decided),
        "undecided": len(rows) - len(decided),
        "rule": AGREEMENT_RULE,
        "runs": rows,
    }
    return {**document, "cells": cells, "live": summary}


AGREEMENT_RULE = (
    "Cells confirmed live were picked along each strategy's simulated boundary, alternating sides. A live verdict "
    "agrees when it is the simulated one (server: recovery seen after every trigger; users likewise); null where "
    "the simulation is mixed or the live run failed. The ratio is the live time to recover over the simulated median."
)
