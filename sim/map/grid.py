"""A map's grid: one scenario per cell, and its runs (strategy x cell x seed), in parallel over the cores.

Each cell is the scenario with every axis set to one of its values. Unless the map
varies ``load.duration`` itself, each cell runs until ``horizon`` after its last trigger
ends (the scenario's own time after its last trigger, unless given), so a longer trigger
is not judged over a shorter time. Each run is one strategy of one cell with one seed:
the scenario's seed, then the next ones for ``--repeat``; every cell gets the same seeds.
A run is a pure function of its inputs, so the results do not depend on how many
workers ran them or in what order.
"""

from __future__ import annotations

import concurrent.futures
import copy
import dataclasses
import itertools
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from retrystorm.errors import UserError
from retrystorm.experiment.scenario import Scenario, ScenarioError, scenario_from_data
from retrystorm.experiment.scenario.model import MAX_RUN_S
from retrystorm.sim.config import RunConfig
from retrystorm.sim.engine import simulate
from retrystorm.sim.map.vary import Axis, set_value

Progress = Callable[[str], None]


@dataclasses.dataclass(frozen=True, slots=True)
class Cell:
    """One point of the grid: a value per axis, and the scenario data it runs."""

    index: int
    values: tuple[float, ...]
    data: dict[str, Any]

    def scenario(self) -> Scenario:
        """The cell's scenario, validated."""
        return scenario_from_data(copy.deepcopy(self.data), source="map cell")


@dataclasses.dataclass(frozen=True, slots=True)
class Task:
    """One run: a strategy of a cell with a seed."""

    cell: int
    label: str
    seed: int
    data: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class RunFigures:
    """What one run gives the map. Recovery is ``None`` unless seen after every trigger of the run; then the
    longest of them (the server's and the users', as in :mod:`retrystorm.experiment.analysis.recovery`)."""

    cell: int
    label: str
    seed: int
    server_recovery_s: float | None
    client_recovery_s: float | None
    peak_in_flight: int
    amplification: float | None
    success_ratio: float | None
    events: int
    cpu_s: float
    worker: int = 0  # the process that ran it (its pid): where the work went, not in map.json

    def to_json(self) -> dict[str, object]:
        """The run's figures for ``map.json`` (its CPU time left out: it differs from run to run)."""
        return {
            "seed": self.seed,
            "server_recovery_s": _round(self.server_recovery_s),
            "client_recovery_s": _round(self.client_recovery_s),
            "peak_in_flight": self.peak_in_flight,
            "amplification": _round(self.amplification),
            "success_ratio": _round(self.success_ratio),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def longest(values: Sequence[float | None]) -> float | None:
    """The longest of the times to recover, ``None`` when one is missing (a trigger not recovered from) or none."""
    return None if not values or any(value is None for value in values) else max(v for v in values if v is not None)


def run_task(task: Task) -> RunFigures:
    """Run ``task`` in this process (a worker's entry point: it takes and returns plain data)."""
    start = time.process_time()
    scenario = scenario_from_data({**task.data, "seed": task.seed}, source="map cell")
    entry = next(entry for entry in scenario.strategies if entry.label == task.label)
    timeline = scenario.timeline()
    output = simulate(RunConfig.from_scenario(scenario, entry, timeline.outages, timeline.triggers))
    result = output.result()
    return RunFigures(
        cell=task.cell,
        label=task.label,
        seed=task.seed,
        server_recovery_s=longest([recovery.server_s for recovery in result.recoveries]),
        client_recovery_s=longest([recovery.client_s for recovery in result.recoveries]),
        peak_in_flight=output.peak_in_flight,
        amplification=result.amplification,
        success_ratio=result.success_ratio,
        events=output.counts["events"],
        cpu_s=time.process_time() - start,
        worker=os.getpid(),
    )


def latest_trigger_end_s(scenario: Scenario) -> float:
    """When the scenario's last trigger can end at the latest (``inf`` for one repeated until the run ends)."""
    return max((fault.plan().latest_end_s() for fault in scenario.faults), default=0.0)


def default_horizon_s(scenario: Scenario) -> float | None:
    """The scenario's own time after its last trigger (``None`` when a trigger repeats until the end)."""
    end = latest_trigger_end_s(scenario)
    return None if end == float("inf") else scenario.load.duration - end


def build_cells(
    data: dict[str, Any], scenario: Scenario, axes: Sequence[Axis], horizon_s: float | None, source: str
) -> list[Cell]:
    """Every cell of the grid, each validated (the first bad one a :class:`UserError` naming its values)."""
    keep_duration = horizon_s is None or any(axis.parts == ("load", "duration") for axis in axes)
    cells = []
    for index, values in enumerate(itertools.product(*(axis.values for axis in axes))):
        cell = copy.deepcopy(data)
        for axis, value in zip(axes, values, strict=True):
            set_value(cell, scenario, axis.parts, round(value) if axis.integer else value)
        where = f"{source} with " + ", ".join(f"{a.path}={a.show(v)}" for a, v in zip(axes, values, strict=True))
        if not keep_duration and horizon_s is not None:
            set_value(cell, scenario, ("load", "duration"), MAX_RUN_S)
            end = latest_trigger_end_s(_validated(cell, where))
            set_value(cell, scenario, ("load", "duration"), min(MAX_RUN_S, end + horizon_s))
        _validated(cell, where)
        cells.append(Cell(index, tuple(values), cell))
    return cells


def _validated(data: dict[str, Any], where: str) -> Scenario:
    try:
        return scenario_from_data(copy.deepcopy(data), source=where)
    except ScenarioError as error:
        raise UserError(str(error)) from None


def tasks_of(cells: Sequence[Cell], labels: Sequence[str], seeds: Sequence[int]) -> list[Task]:
    """Every run, strategy by strategy, cell by cell, seed by seed."""
    return [Task(cell.index, label, seed, cell.data) for label in labels for cell in cells for seed in seeds]


def run_all(
    tasks: Sequence[Task], workers: int, progress: Progress | None = None, done: dict[int, RunFigures] | None = None
) -> list[RunFigures]:
    """Every task's figures, in the order of ``tasks``; ``done`` (by task index) are not run again.

    One worker runs them here; more run them in a :class:`concurrent.futures.ProcessPoolExecutor`.
    """
    found: dict[int, RunFigures] = dict(done or {})
    pending = [index for index in range(len(tasks)) if index not in found]
    step = max(1, len(tasks) // 20)
    if workers <= 1:
        for count, index in enumerate(pending, start=1):
            found[index] = run_task(tasks[index])
            _report(progress, count, len(pending), step)
    else:
        with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(run_task, tasks[index]): index for index in pending}
            for count, future in enumerate(concurrent.futures.as_completed(futures), start=1):
                found[futures[future]] = future.result()
                _report(progress, count, len(pending), step)
    return [found[index] for index in range(len(tasks))]


def _report(progress: Progress | None, count: int, total: int, step: int) -> None:
    if progress is not None and (count % step == 0 or count == total):
        progress(f"{count:,} of {total:,} runs")
