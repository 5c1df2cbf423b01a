"""``retrystorm map SCENARIO --vary PATH=RANGE [--vary ...]``: where each retry strategy tips over.

Sweeps one or two scenario fields over a grid in the simulator, every strategy in every
cell with ``--repeat`` seeds, in parallel over the cores, and writes ``map.json``,
``map.csv``, the phase diagram ``map.png`` and ``report.html``. A map that would take
more CPU than ``--budget`` is refused with the estimate; bad paths, ranges and marks are
one line naming the field. Exit 0, or 2 on bad input or a map over budget.

The command ``retrystorm map`` is :mod:`retrystorm.runner.map_cli`'s, which adds ``--live`` (cells
confirmed by the live runner, which the simulator may not import) to these options and
calls :func:`simulate_map` and :func:`show_map`; this module holds the options and the simulated map.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from retrystorm.cli_types import DURATION
from retrystorm.console import err, out
from retrystorm.durations import format_duration
from retrystorm.sim.map.document import MapPlan
from retrystorm.user_files import prepare_out_folder

MAX_AXES = 2


def _progress(message: str) -> None:
    if err.is_terminal:
        err.print(f"[dim]{message}[/dim]")


MAP_OPTIONS = (
    click.argument("scenario_file", metavar="SCENARIO"),
    click.option(
        "--vary", "varies", multiple=True, required=True, metavar="PATH=RANGE",
        help="A field and its values: faults[0].for=5s..60s:12, load.users=200..2000:10:log, or PATH=A,B,C (1 or 2).",
    ),
    click.option("--strategy", "labels", multiple=True, metavar="LABEL", help="Only this strategy (repeatable)."),
    click.option("--repeat", type=click.IntRange(1, 100), default=1, show_default=True, help="Seeds per cell."),
    click.option("--seed", type=int, default=None, help="The first seed (default: the scenario's)."),
    click.option(
        "--out", "folder", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="Folder for map.json, map.csv, map.png, report.html (default: maps/<scenario>-<UTC time>).",
    ),
    click.option("--force", is_flag=True, help="Write into an --out folder that already holds results, over them."),
    click.option("--budget", type=DURATION, default="30m", show_default=True, help="Most CPU time the map may take."),
    click.option(
        "--workers", type=click.IntRange(1, 256), default=None, help="Processes running cells (default: one per core)."
    ),
    click.option(
        "--horizon", type=DURATION, default=None,
        help="How long each cell runs after its last trigger (default: the scenario's own time after it).",
    ),
    click.option(
        "--mark", "marks", multiple=True, metavar="LABEL@PATH=V[,PATH=V]",
        help="A point to star on the map, at a value of every varied field, e.g. 'published@faults[0].for=10s'.",
    ),
    click.option("--json", "as_json", is_flag=True, help="Print map.json on stdout and nothing else there."),
    click.option("--dry-run", is_flag=True, help="Print the grid and the runs it takes; run nothing."),
)  # fmt: skip


def map_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """The options of ``retrystorm map`` (the simulated part), for a command that adds its own."""
    for option in reversed(MAP_OPTIONS):
        command = option(command)
    return command


@dataclasses.dataclass(frozen=True, slots=True)
class SimulatedMap:
    """A map simulated and written: its plan, ``map.json``'s content and the folder holding its files."""

    plan: MapPlan
    document: dict[str, Any]
    folder: Path


def simulate_map(
    *,
    scenario_file: str,
    varies: tuple[str, ...],
    labels: tuple[str, ...],
    repeat: int,
    seed: int | None,
    folder: Path | None,
    force: bool = False,
    budget: float,
    workers: int | None,
    horizon: float | None,
    marks: tuple[str, ...],
    dry_run: bool,
    check: Callable[[MapPlan], None] | None = None,
) -> SimulatedMap | None:
    """Plan, check (``check``, before any run), estimate, run and write a map; ``None`` for a dry run."""
    from retrystorm.sim.map.budget import STATIC_US_PER_REQUEST, estimate, offered_requests
    from retrystorm.sim.map.build import prepare

    plan = prepare(scenario_file, varies, labels, repeat=repeat, seed=seed, horizon_s=horizon, marks=marks)
    if check is not None:
        check(plan)
    cells, tasks = plan.cells, plan.tasks
    if dry_run:
        offered = sum(offered_requests(cells[task.cell].scenario()) for task in tasks)
        out.print(plan.describe(), markup=False, highlight=False)
        out.print(
            f"static estimate: {format_duration(round(offered * STATIC_US_PER_REQUEST * 1e-6))} of CPU "
            f"({offered:,.0f} offered requests x {STATIC_US_PER_REQUEST:g} us); dry run: nothing was run",
            markup=False,
        )
        return None
    wall, cpu = time.perf_counter(), time.process_time()
    found = estimate(tasks, cells, budget, _progress, shape=[len(axis.values) for axis in plan.axes])
    found.check(budget)
    target = folder or Path("maps") / f"{plan.name}-{dt.datetime.now(dt.UTC):%Y%m%d-%H%M%S}"
    prepare_out_folder(target, force=force)  # before the cells run: never a refusal after them
    err.print(f"estimate: {format_duration(round(found.cpu_s))} of CPU ({found.how})", markup=False, soft_wrap=True)
    from retrystorm.sim.map.grid import run_all

    figures = run_all(tasks, workers or os.cpu_count() or 1, _progress, found.calibration)
    document = plan.document(figures)
    from retrystorm.sim.map.write import write_map

    written = write_map(target, document)
    spent = time.process_time() - cpu + sum(run.cpu_s for run in figures if run not in found.calibration.values())
    err.print(f"wrote {', '.join(str(path) for path in written)}", markup=False, soft_wrap=True)
    err.print(
        f"{len(tasks):,} runs in {time.perf_counter() - wall:.1f} s, {spent:.1f} s of CPU", markup=False, soft_wrap=True
    )
    return SimulatedMap(plan, document, target)


def show_map(document: dict[str, Any], *, as_json: bool) -> None:
    """``map.json`` on stdout (``--json``), or the map's tables."""
    if as_json:
        click.echo(json.dumps(document, indent=2))
    else:
        from retrystorm.sim.map.show import print_map

        print_map(document, out)
