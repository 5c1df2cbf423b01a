"""``retrystorm map --live N``: the cells :func:`retrystorm.sim.map.confirm.choose_live_cells` picks, each run live.

Each pick is its cell's scenario with that one strategy, run as ``retrystorm run`` runs
it (the local backend: a fresh target and a headless Locust on 127.0.0.1, the triggers
played live), its run folder under ``live/`` in the map's folder. What it gives the map
is its times to recover (server and users, the longest over the triggers' episodes, as
the simulated cells), or the error that stopped it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrystorm.chaos.backends.base import BackendError
from retrystorm.chaos.journal import Journal
from retrystorm.console import err
from retrystorm.durations import format_duration
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import Scenario
from retrystorm.runner.errors import RunFailedError
from retrystorm.runner.orchestrate import Stack, execute
from retrystorm.runner.plan import OVERHEAD_S, Plan, check_fault_targets, check_live_triggers, make_plan, select
from retrystorm.runner.progress import Display
from retrystorm.sim.map.confirm import LivePick
from retrystorm.sim.map.document import MapPlan
from retrystorm.sim.map.grid import longest

log = logging.getLogger(__name__)


def cell_scenario(plan: MapPlan, pick: LivePick) -> Scenario:
    """The picked cell's scenario with only the picked strategy."""
    scenario = plan.cells[pick.cell].scenario()
    return scenario.model_copy(update={"strategies": select(scenario, [pick.strategy])})


def cell_estimate_s(plan: MapPlan, pick: LivePick) -> float:
    """Wall-clock seconds one live cell takes: its run's length and the processes' start and stop."""
    return cell_scenario(plan, pick).load.duration + OVERHEAD_S


def longest_cell_s(plan: MapPlan) -> float:
    """The longest a live cell of ``plan`` can take, for the estimate before the grid is simulated."""
    return max(cell.scenario().load.duration for cell in plan.cells) + OVERHEAD_S


def scenario_dir(plan: MapPlan) -> Path | None:
    """Where a scenario's own ``target.command`` runs: the scenario file's folder (``None``: a shipped one)."""
    path = Path(plan.source)
    return path.resolve().parent if path.is_file() else None


def local_stack_for(folder: Path, scenario: Scenario, plan: MapPlan) -> Stack:
    """The local backend's stack for a cell, its logs in ``folder``."""
    from retrystorm.runner.local import local_stack  # noqa: PLC0415 - as retrystorm.runner.cli: the backend only when used

    return local_stack(folder / "logs", scenario.target, scenario_dir(plan))


def check_live(plan: MapPlan) -> None:
    """Refuse, before the grid is simulated, a map whose cells the local backend cannot run live (``UserError``)."""
    scenario = plan.cells[0].scenario()
    if scenario.grpc is not None:
        raise UserError(
            "map --live: the cells of a grpc: scenario do not run live yet; accepted: the map without --live, "
            "then a cell through retrystorm run SCENARIO --simulate"
        )
    stack = local_stack_for(Path(), scenario, plan)
    check_live_triggers(scenario, stack.trigger_refusal)
    run_plan = make_plan(scenario, select(scenario, plan.labels))
    check_fault_targets([*run_plan.outages, *run_plan.triggers], stack.fault_target_names, stack.name)


def plan_lines(plan: MapPlan, picks: Sequence[LivePick], asked: int) -> list[str]:
    """The live part's plan: each pick, where it is, how long; the estimate in all."""
    total = sum(cell_estimate_s(plan, pick) for pick in picks)
    head = f"live: {len(picks)} cell{'s' if len(picks) != 1 else ''} along the simulated boundary"
    if len(picks) < asked:
        head += f" (of {asked} asked: the boundary has no more)"
    lines = [f"{head}, one after the other, about {format_duration(round(total))} in all"]
    for number, pick in enumerate(picks, start=1):
        cell = plan.cells[pick.cell]
        at = ", ".join(f"{axis.path}={axis.show(value)}" for axis, value in zip(plan.axes, cell.values, strict=True))
        lines.append(
            f"  [{number}/{len(picks)}] {pick.strategy} at {at}: the {pick.side} side, "
            f"about {format_duration(round(cell_estimate_s(plan, pick)))}"
        )
    return lines


def run_cell(plan: MapPlan, pick: LivePick, folder: Path) -> dict[str, Any]:
    """Run one picked cell live into ``folder``: its times to recover, or the error that stopped it.

    :class:`~retrystorm.runner.orchestrate.RunInterruptedError` (SIGINT, SIGTERM) goes up: the map stops there.
    """
    from retrystorm.runner.outputs import run_document, write_run  # noqa: PLC0415 - plotting only once a cell has run
    from retrystorm.runner.record import analyse  # noqa: PLC0415

    scenario = cell_scenario(plan, pick)
    stack = local_stack_for(folder, scenario, plan)
    run_plan = make_plan(scenario, scenario.strategies)
    try:
        records = _execute(run_plan, stack)
    except (RunFailedError, BackendError) as error:
        message = " ".join(str(error).split())
        err.print(f"live cell failed: {message}", markup=False, soft_wrap=True)
        return {"folder": str(folder), "error": message}
    [record] = records
    result = analyse(record)
    info = {"scenario": scenario.name, "seed": scenario.seed, "stack": stack.name, "folder": str(folder)}
    write_run(folder, run_document(scenario.name, [result], records, info, None), records, [])
    return {
        "folder": str(folder),
        "server_recovery_s": longest([recovery.server_s for recovery in result.recoveries]),
        "client_recovery_s": longest([recovery.client_s for recovery in result.recoveries]),
    }


def _execute(plan: Plan, stack: Stack) -> list[Any]:
    with Display(err) as display:
        return asyncio.run(execute(plan, stack, display, Journal(None), None))
