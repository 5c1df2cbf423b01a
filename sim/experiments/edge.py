"""``retrystorm sim edge``: the metastability edge of each strategy.

For each strategy, the shortest outage after which the server does not recover within
a horizon, found by bisection: an outage of length ``L`` starts where the scenario's
first fault starts (20 s without one), the run goes on for ``horizon`` after the resume,
and the server *recovers* when :func:`retrystorm.experiment.analysis.server_recovery_s` finds its
recovery (5 s sustained) inside that time. Bisection assumes that a longer outage never
recovers when a shorter one did not; the sampled curve of recovery time against outage
length, plotted beside the edges, shows where that does not quite hold. A strategy whose
edge is longer is more robust; one without an edge up to ``max_outage`` removed it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from retrystorm.durations import format_duration
from retrystorm.experiment.scenario import Fault, Scenario, StrategyEntry
from retrystorm.sim.config import RunConfig
from retrystorm.sim.engine import simulate
from retrystorm.sim.experiments.base import Report

Progress = Callable[[str], None]


@dataclasses.dataclass(slots=True)
class EdgeSearch:
    """One strategy's bisection and sampled curve."""

    strategy: str
    edge_s: float | None
    curve: dict[float, float | None]  # outage length -> server recovery time (None: not within the horizon)

    def to_json(self, horizon_s: float, max_outage_s: float) -> dict[str, object]:
        """``strategy``, ``edge_s`` (``null``: no edge up to ``max_outage_s``), and the curve."""
        return {
            "strategy": self.strategy,
            "edge_s": self.edge_s,
            "horizon_s": horizon_s,
            "max_outage_s": max_outage_s,
            "curve": [
                {"outage_s": float(outage), "server_recovery_s": None if time is None else round(time, 6)}
                for outage, time in sorted(self.curve.items())
            ],
        }


def recovery_after(scenario: Scenario, entry: StrategyEntry, outage_s: float, horizon_s: float) -> float | None:
    """Server recovery time after one outage of ``outage_s`` (``None``: not within ``horizon_s``)."""
    at = scenario.faults[0].at if scenario.faults else 20.0
    fault = Fault.model_validate({"pause": "target", "at": at, "for": outage_s})
    load = scenario.load.model_copy(update={"duration": at + outage_s + horizon_s})
    variant = scenario.model_copy(update={"faults": [fault], "load": load, "strategies": [entry]})
    output = simulate(RunConfig.from_scenario(variant, entry, tuple(variant.outages())))
    return output.result().recoveries[0].server_s


def search_edge(
    scenario: Scenario,
    entry: StrategyEntry,
    *,
    horizon_s: float,
    max_outage_s: float,
    resolution_s: float,
    curve_points: int,
) -> EdgeSearch:
    """Bisection for ``entry``'s edge, to ``resolution_s``, plus ``curve_points`` evenly spaced samples."""
    curve: dict[float, float | None] = {}

    def recovered(outage_s: float) -> bool:
        outage_s = float(round(outage_s, 6))
        if outage_s not in curve:
            curve[outage_s] = recovery_after(scenario, entry, outage_s, horizon_s)
        return curve[outage_s] is not None

    for index in range(1, curve_points + 1):
        recovered(max_outage_s * index / curve_points)
    if recovered(max_outage_s):
        return EdgeSearch(entry.label, None, curve)
    low, high = 0.0, max_outage_s
    while high - low > resolution_s + 1e-9:
        middle = round((low + high) / 2 / resolution_s) * resolution_s  # stay on the resolution's grid
        if middle in (low, high):
            break
        if recovered(middle):
            low = middle
        else:
            high = middle
    return EdgeSearch(entry.label, float(round(high, 6)), curve)


def run(
    scenario: Scenario,
    *,
    horizon_s: float = 60.0,
    max_outage_s: float = 120.0,
    resolution_s: float = 1.0,
    curve_points: int = 12,
    progress: Progress | None = None,
) -> Report:
    """The edge of every strategy in ``scenario``."""
    searches = []
    for entry in scenario.strategies:
        if progress is not None:
            progress(f"bisecting the edge of {entry.label}")
        searches.append(
            search_edge(
                scenario,
                entry,
                horizon_s=horizon_s,
                max_outage_s=max_outage_s,
                resolution_s=resolution_s,
                curve_points=curve_points,
            )
        )
    notes = [
        (
            f"Outage starts at {format_duration(scenario.faults[0].at if scenario.faults else 20.0)}; recovery must "
            f"be seen within {format_duration(horizon_s)} of the resume; edges to {format_duration(resolution_s)}, "
            f"searched up to {format_duration(max_outage_s)}."
        ),
        "Bisection assumes longer outages are never easier to recover from; the curve shows each sample.",
    ]
    return Report(
        experiment="edge",
        kind="edge",
        rows=[search.to_json(horizon_s, max_outage_s) for search in searches],
        notes=notes,
        extra={"scenario": scenario.name},
    )
