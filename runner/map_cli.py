"""``retrystorm map ... [--live N]``: the simulated map (:mod:`retrystorm.sim.map.cli`), then N of its cells live.

The command lives here, above the simulator, because ``--live`` runs cells through the
live runner, which the simulator may not import. Without ``--live`` (or with ``--live
0``) it is the simulated map alone. With it: the grid is simulated and written, the
cells to confirm are picked along each strategy's boundary (:mod:`retrystorm.sim.map.confirm`),
the plan is printed with its estimated duration, each cell runs live
(:mod:`retrystorm.runner.map_live`), and ``map.json``, ``map.csv``, ``report.html`` and the
terminal say, for each, whether live and simulated verdicts agree. Exit 0 whatever
the agreement (it is a finding), 2 on bad input, 130 when SIGINT or SIGTERM stopped
the live runs (the cells done so far are written).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from retrystorm.console import err, out
from retrystorm.durations import format_duration
from retrystorm.errors import UserError
from retrystorm.host import linux_problem
from retrystorm.runner.orchestrate import RunInterruptedError
from retrystorm.sim.map.cli import map_options, show_map, simulate_map
from retrystorm.sim.map.confirm import LivePick, choose_live_cells, with_agreements
from retrystorm.sim.map.document import MapPlan

#: The most cells ``--live`` confirms: each is a live run of minutes.
MAX_LIVE = 100
EXIT_INTERRUPTED = 130


def _live_folder(folder: Path, number: int, pick: LivePick) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in pick.strategy)
    return folder / "live" / f"{number:02d}-{safe}-cell{pick.cell}"


def confirm_live(plan: MapPlan, document: dict[str, Any], folder: Path, count: int) -> tuple[dict[str, Any], int]:
    """Pick, announce and run the live cells; the document with their agreement, and the exit status."""
    from retrystorm.runner.map_live import plan_lines, run_cell  # noqa: PLC0415 - the live runner only with --live

    picks = choose_live_cells(document, count)
    err.print("\n".join(plan_lines(plan, picks, count)), markup=False, highlight=False, soft_wrap=True)
    lives: list[dict[str, Any]] = []
    status = 0
    for number, pick in enumerate(picks, start=1):
        err.print(f"live [{number}/{len(picks)}]: {pick.strategy}, cell {pick.cell}", markup=False)
        try:
            lives.append(run_cell(plan, pick, _live_folder(folder, number, pick)))
        except RunInterruptedError as error:
            err.print(f"retrystorm map: {error}; the {len(lives)} cells done are written", markup=False)
            status = EXIT_INTERRUPTED
            break
    return with_agreements(document, picks[: len(lives)], lives), status


def print_agreement(document: dict[str, Any]) -> None:
    """The live confirmations as the report words them: the count that agree, a line per cell."""
    from retrystorm.experiment.report.map_page import live_lines  # noqa: PLC0415

    first, *cells, _rule = live_lines(document)
    out.print(f"live: {first}", markup=False, soft_wrap=True)
    for line in cells:
        out.print(f"  {line}", markup=False, soft_wrap=True)


def _dry_run_live(plan_args: dict[str, Any], count: int) -> None:
    from retrystorm.runner.map_live import longest_cell_s  # noqa: PLC0415
    from retrystorm.sim.map.build import prepare  # noqa: PLC0415

    plan = prepare(
        plan_args["scenario_file"], plan_args["varies"], plan_args["labels"], repeat=plan_args["repeat"],
        seed=plan_args["seed"], horizon_s=plan_args["horizon"], marks=plan_args["marks"],
    )  # fmt: skip
    longest = longest_cell_s(plan)
    out.print(
        f"live: then up to {count} cells along the simulated boundary, picked once the grid is simulated, "
        f"up to {format_duration(round(longest))} each: at most {format_duration(round(count * longest))} in all",
        markup=False,
        soft_wrap=True,
    )


@click.command("map")
@map_options
@click.option(
    "--live", "live_cells", type=click.IntRange(0, MAX_LIVE), default=0, show_default=True, metavar="N",
    help="Then confirm N cells live (local processes on 127.0.0.1), picked along each strategy's simulated "
    "boundary, alternating sides; the plan and its estimated duration are printed first.",
)  # fmt: skip
def map_command(*, as_json: bool, live_cells: int, **options: Any) -> None:
    """Map where each strategy of SCENARIO tips over: vary one or two fields, see which cells recover.

    SCENARIO is a shipped scenario's name or a YAML file with at least one trigger
    under faults. Each cell runs every strategy (or each --strategy) with --repeat
    seeds in the simulator, until the scenario's own time after its last trigger has
    passed. With --live N, N cells along the simulated boundary then run live, and the
    map says whether live and simulated verdicts agree.
    """
    check = None
    if live_cells:
        if problem := linux_problem("retrystorm map --live"):
            raise UserError(problem)
        from retrystorm.runner.map_live import check_live  # noqa: PLC0415

        check = check_live
    found = simulate_map(**options, check=check)
    if found is None:
        if live_cells:
            _dry_run_live(options, live_cells)
        return
    document, status = found.document, 0
    if live_cells:
        if not as_json:
            show_map(document, as_json=False)
        document, status = confirm_live(found.plan, document, found.folder, live_cells)
        from retrystorm.sim.map.write import write_map  # noqa: PLC0415

        write_map(found.folder, document)
        err.print(f"wrote the live agreement into {found.folder}", markup=False, soft_wrap=True)
        if as_json:
            click.echo(json.dumps(document, indent=2))
        else:
            print_agreement(document)
    else:
        show_map(document, as_json=as_json)
    click.get_current_context().exit(status)
