"""Several runs of each strategy (``retrystorm run --repeat N``): the run that stands for each, and every figure's
spread.

Each strategy's runs are ordered by how well its server and then its users came back (outages recovered, most
first; then the total recovery time, shortest first; the server before the users), and the middle one (the
lower middle for an even number) stands for the strategy: its row is the strategy's row of ``results``, so every
number a headline quotes comes from one real run, told as it happened. Beside it, ``spread`` gives each headline
figure (:data:`FIGURES`) over all the runs: the values in run order, the smallest and the largest (``null``
where a run had none, e.g. a recovery never seen; ``never`` counts those). The ranking
(:mod:`retrystorm.experiment.report.ranking`) reads the runs themselves to widen each key's margin to the
strategies' own spread.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

#: The figures whose spread over the runs is reported.
FIGURES = (
    "server_recovery_s",
    "client_recovery_s",
    "success_ratio",
    "amplification",
    "peak_in_flight",
    "latency_p99",
)

Row = Mapping[str, Any]


def _per_outage(row: Row, key: str) -> list[float | None]:
    value = row.get(key)
    values = value if isinstance(value, list) else [value]
    return [float(item) if isinstance(item, int | float) else None for item in values]


def _recovered(values: Sequence[float | None]) -> tuple[int, float]:
    """``(outages not recovered, total time of those that were)``: smaller is better."""
    seen = [value for value in values if value is not None]
    return len(values) - len(seen), math.fsum(seen)


def standing(row: Row) -> tuple[int, float, int, float]:
    """The order of a strategy's runs: the server's recoveries, then the users' (smaller is better)."""
    return (*_recovered(_per_outage(row, "server_recovery_s")), *_recovered(_per_outage(row, "client_recovery_s")))


def representative(rows: Sequence[Row]) -> Row:
    """The run that stands for its strategy: the middle one by :func:`standing` (the lower middle for an even
    number; the earlier run on a tie)."""
    ordered = sorted(rows, key=standing)
    return ordered[(len(ordered) - 1) // 2]


def _number(value: object) -> float | None:
    """A figure as one number: a recovery over several outages as their total, ``None`` when any was not seen."""
    if isinstance(value, list):
        numbers = [_number(item) for item in value]
        return None if any(number is None for number in numbers) else math.fsum(n for n in numbers if n is not None)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def spread(rows: Sequence[Row]) -> dict[str, dict[str, object]]:
    """Each figure of :data:`FIGURES` over ``rows``: ``values`` in run order, ``min``, ``max``, ``never`` (runs
    without a value)."""
    found: dict[str, dict[str, object]] = {}
    for figure in FIGURES:
        values = [_number(row.get(figure)) for row in rows]
        numbers = [value for value in values if value is not None]
        found[figure] = {
            "values": [None if value is None else round(value, 6) for value in values],
            "min": round(min(numbers), 6) if numbers else None,
            "max": round(max(numbers), 6) if numbers else None,
            "never": len(values) - len(numbers),
        }
    return found


def summarise(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """One row per strategy (in first-seen order): its representative run's row, with ``runs`` (how many),
    ``spread`` and ``passed`` over every run (an assertion must hold in each)."""
    by_label: dict[str, list[Row]] = {}
    for row in rows:
        by_label.setdefault(str(row["strategy"]), []).append(row)
    found = []
    for runs in by_label.values():
        chosen = dict(representative(runs))
        chosen["runs"] = len(runs)
        chosen["spread"] = spread(runs)
        verdicts = [row.get("passed") for row in runs if "passed" in row]
        if verdicts:
            chosen["passed"] = all(verdict is True for verdict in verdicts)
        found.append(chosen)
    return found
