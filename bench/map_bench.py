"""Map benchmark: a grid of the seed outage for 2 strategies, its cost, how it grows, how it spreads.

Run from a checkout: ``.venv/bin/python bench/map_bench.py`` (``--quick``: grids up to 6x5).
Maps ``smira-sigstop`` (fixed:100ms and smira) over ``faults[0].for`` x ``load.users``,
as ``retrystorm map`` does (cells built and validated, calibration runs, the runs, the
document; files are not written), for growing grids up to 12x10, with 1 and with 2
worker processes. Beside it, in the same run: one cell simulated alone (the runs of
``retrystorm sim run`` for that cell, both strategies), the unit every figure is a
multiple of. CPU is this process's plus its finished children's (``getrusage``); wall is
``perf_counter``. The machine is shared: compare ratios measured side by side, not
absolute times.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from collections.abc import Callable
from typing import Any

from retrystorm.sim.experiments.scenario_runs import run_scenario
from retrystorm.sim.map.budget import estimate
from retrystorm.sim.map.build import prepare
from retrystorm.sim.map.grid import RunFigures, run_all

SCENARIO = "smira-sigstop"
FOR, USERS = "faults[0].for", "load.users"


def cpu_now() -> float:
    """CPU seconds of this process and of its children that have ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measured(function: Callable[[], Any]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of one call, and its result."""
    wall, cpu = time.perf_counter(), cpu_now()
    result = function()
    return time.perf_counter() - wall, cpu_now() - cpu, result


def one_cell() -> float:
    """CPU seconds of the grid's middle cell alone (30 s freeze, 1,000 users), both strategies, best of 3."""
    plan = prepare(SCENARIO, [f"{FOR}=30s", f"{USERS}=1000"], (), repeat=1, seed=None, horizon_s=None, marks=())
    scenario = plan.cells[0].scenario()
    return min(measured(lambda: run_scenario(scenario))[1] for _ in range(3))


def grid(columns: int, rows: int, workers: int) -> tuple[float, float, int, list[float]]:
    """Wall and CPU seconds of a ``columns`` x ``rows`` map with ``workers`` processes, its cells, and the CPU
    seconds of runs each process did (this one's calibration runs first)."""
    varies = [f"{FOR}=5s..60s:{columns}", f"{USERS}=200..2000:{rows}"]
    figures: list[RunFigures] = []

    def make() -> object:
        plan = prepare(SCENARIO, varies, (), repeat=1, seed=None, horizon_s=None, marks=())
        found = estimate(plan.tasks, plan.cells, budget_s=3600.0, shape=[len(axis.values) for axis in plan.axes])
        figures.extend(run_all(plan.tasks, workers, done=found.calibration))
        return plan.document(figures)

    wall, cpu, _ = measured(make)
    per_process: dict[int, float] = {os.getpid(): 0.0}
    for run in figures:
        per_process[run.worker] = per_process.get(run.worker, 0.0) + run.cpu_s
    return wall, cpu, columns * rows, list(per_process.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="grids up to 6x5")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    unit = one_cell()
    print(f"one cell alone ({SCENARIO}, 30 s freeze, 1,000 users, 2 strategies): {unit:.2f} s CPU")
    print(f"  = {1 / unit:.2f} cells per CPU-second; {cores} cores here")
    print()
    print(f"load average at the start: {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    header = f"{'grid':>7}{'cells':>7}{'workers':>9}{'wall s':>9}{'CPU s':>9}{'cells/CPU-s':>13}{'vs alone':>10}"
    print(header + f"{'wall, 1 vs 2':>14}   CPU s of runs per process (this one, then the workers)")
    sizes = ((3, 3), (6, 5)) if args.quick else ((3, 3), (6, 5), (12, 10))
    for columns, rows in sizes:
        walls = {}
        for workers in (1, 2):
            wall, cpu, cells, spread = grid(columns, rows, workers)
            walls[workers] = wall
            speed = f"{walls[1] / wall:.2f}x" if workers == 2 else ""
            print(
                f"{columns}x{rows:<5}{cells:>7}{workers:>9}{wall:>9.1f}{cpu:>9.1f}{cells / cpu:>13.2f}"
                f"{cells / cpu * unit:>10.2f}{speed:>14}   {' + '.join(f'{share:.1f}' for share in spread)}"
            )
    print()
    print("vs alone: cells per CPU-second over one cell simulated alone (1.00: no overhead; below 1: the")
    print("calibration runs and the map's own work). The grid's cells differ in cost: the larger the")
    print("freeze and the load, the longer the retry storm a cell simulates. Wall times depend on what else")
    print(f"runs here: load average at the end {', '.join(f'{v:.2f}' for v in os.getloadavg())}.")


if __name__ == "__main__":
    main()
