"""What a map would cost, before it runs: CPU estimated from calibration runs, checked against ``--budget``.

A run's CPU time grows with the requests its load offers (users over their think time,
or the open-loop rate, times the run's length, spikes included): :func:`offered_requests`.
How much per request depends on the strategy and on whether the cell storms, so the
estimate first runs the grid's corners for each strategy (2 on a line, 4 on a plane: the
mildest and the harshest cells are among them when each axis makes the trigger or the
load grow one way), takes the dearest CPU per offered request of them, and scales it by
each run's offered requests. The calibration runs are real runs of the map: their
figures are kept.

When one cell alone would take longer than the budget at :data:`STATIC_US_PER_REQUEST`
(a storm's cost per offered request: fixed 100 ms retries through the seed's outage cost
17 us per offered request, a storm of immediate resends several times that), nothing is
run: the estimate is that figure times every run's offered requests.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence

from retrystorm.durations import format_duration
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import Scenario, SpikeWindow
from retrystorm.sim.map.grid import Cell, Progress, RunFigures, Task, run_task

#: Microseconds of CPU per offered request assumed without a calibration run.
STATIC_US_PER_REQUEST = 50.0


def offered_requests(scenario: Scenario) -> float:
    """Logical requests the load offers over the run (what a run's CPU time grows with), at least 1.

    Closed loop: ``users / max(think, 10 ms) * duration`` (and at most ``users *
    requests_per_user``); open loop: ``rate * duration``; each spike adds ``factor - 1``
    times that over its window.
    """
    load = scenario.load
    per_s = (load.rate or 0.0) if load.arrival == "open" else load.users / max(load.think_time.mean_s, 0.01)
    extra_s = sum((w.factor - 1) * w.duration_s for w in scenario.timeline().triggers if isinstance(w, SpikeWindow))
    offered = per_s * (load.duration + extra_s)
    if load.arrival == "closed" and scenario.sim.requests_per_user is not None:
        offered = min(offered, load.users * scenario.sim.requests_per_user)
    return max(offered, 1.0)


@dataclasses.dataclass(frozen=True, slots=True)
class Estimate:
    """The CPU a map would take, how it was estimated, and the calibration runs' figures (by task index)."""

    cpu_s: float
    how: str
    calibration: dict[int, RunFigures]

    def check(self, budget_s: float) -> None:
        """Refuse (:class:`UserError`, exit 2) a map over ``budget_s`` of CPU, with the estimate."""
        if self.cpu_s > budget_s:
            raise UserError(
                f"the map would take about {format_duration(round(self.cpu_s))} of CPU, over --budget "
                f"{format_duration(budget_s)} ({self.how}); vary fewer values, --repeat less, or raise --budget"
            )


def corners(shape: Sequence[int]) -> list[int]:
    """The indexes of a grid's corner cells, for axes of ``shape`` values (the last axis varies fastest)."""
    found = set()
    for picks in itertools.product(*((0, size - 1) for size in shape)):
        index = 0
        for pick, size in zip(picks, shape, strict=True):
            index = index * size + pick
        found.add(index)
    return sorted(found)


def estimate(
    tasks: Sequence[Task],
    cells: Sequence[Cell],
    budget_s: float,
    progress: Progress | None = None,
    shape: Sequence[int] | None = None,
) -> Estimate:
    """The CPU ``tasks`` would take (see the module docstring); calibration runs happen here, in this process.

    ``shape``: the number of values of each axis (default: one axis through every cell).
    """
    offered = [offered_requests(cell.scenario()) for cell in cells]
    static = sum(offered[task.cell] for task in tasks) * STATIC_US_PER_REQUEST * 1e-6
    if max(offered) * STATIC_US_PER_REQUEST * 1e-6 > budget_s:
        how = (
            f"offered requests x {STATIC_US_PER_REQUEST:g} us, without a calibration run: one cell offers "
            f"{max(offered):,.0f} requests, more than the budget could simulate"
        )
        return Estimate(static, how, {})
    calibration: dict[int, RunFigures] = {}
    per_request: dict[str, float] = {}
    for label in dict.fromkeys(task.label for task in tasks):
        for corner in corners(shape or [len(cells)]):
            index = next(i for i, task in enumerate(tasks) if task.label == label and task.cell == corner)
            if progress is not None:
                progress(f"calibrating: {label}, cell {corner + 1} of {len(cells)}")
            calibration[index] = figures = run_task(tasks[index])
            cost = figures.cpu_s / offered[corner]
            per_request[label] = max(per_request.get(label, 0.0), cost)
    total = sum(per_request[task.label] * offered[task.cell] for task in tasks)
    costs = ", ".join(f"{label} {1e6 * cost:.1f} us" for label, cost in per_request.items())
    how = (
        f"calibration runs of the grid's corners per strategy, the dearest CPU per offered request "
        f"({costs}) times each run's offered requests"
    )
    return Estimate(total, how, calibration)
