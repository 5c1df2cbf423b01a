"""A map before it runs: the scenario read, the axes and marks parsed, every cell validated (:class:`MapPlan`)."""

from __future__ import annotations

from collections.abc import Sequence

from retrystorm.durations import format_duration
from retrystorm.errors import UserError
from retrystorm.experiment.scenario import Scenario, scenario_data, scenario_from_data
from retrystorm.sim.map.document import MapPlan, Mark
from retrystorm.sim.map.grid import build_cells, default_horizon_s, tasks_of
from retrystorm.sim.map.vary import Axis, parse_path, parse_vary, path_text

MAX_AXES = 2
#: The most runs one map makes (cells x strategies x seeds), whatever the budget.
MAX_RUNS = 100_000


def _axes(varies: Sequence[str], scenario: Scenario) -> list[Axis]:
    if not 1 <= len(varies) <= MAX_AXES:
        raise UserError(f"--vary: give 1 or {MAX_AXES} (a phase diagram has two axes); got {len(varies)}")
    axes = [parse_vary(text, scenario) for text in varies]
    if len({axis.path for axis in axes}) != len(axes):
        raise UserError(f"--vary: {axes[0].path} is given twice; vary two different fields")
    return axes


def parse_mark(text: str, axes: Sequence[Axis]) -> Mark:
    """``LABEL@PATH=V[,PATH=V]``: a value for every varied field, each read as the field reads its values."""
    label, at, values = text.rpartition("@")
    if not at or not label.strip():
        raise UserError(f"--mark {text}: expected LABEL@PATH=VALUE[,PATH=VALUE], e.g. 'published@faults[0].for=10s'")
    given: dict[str, float] = {}
    for item in values.split(","):
        path, equals, value = item.partition("=")
        if not equals:
            raise UserError(f"--mark {text}: {item!r}: expected PATH=VALUE")
        key = path_text(parse_path(path.strip()))
        axis = next((axis for axis in axes if axis.path == key), None)
        if axis is None:
            raise UserError(f"--mark {text}: {key} is not varied; varied: {', '.join(a.path for a in axes)}")
        given[key] = _mark_value(axis, value, text)
    missing = [axis.path for axis in axes if axis.path not in given]
    if missing:
        raise UserError(f"--mark {text}: needs a value of {', '.join(missing)} too")
    return Mark(label.strip(), tuple(given[axis.path] for axis in axes))


def _mark_value(axis: Axis, value: str, text: str) -> float:
    from retrystorm.durations import parse_duration  # noqa: PLC0415 - small, and only for marks
    from retrystorm.errors import SpecError  # noqa: PLC0415

    try:
        return parse_duration(value.strip(), what="value") if axis.duration else float(value)
    except (SpecError, ValueError):
        raise UserError(
            f"--mark {text}: {axis.path}: got {value.strip()!r}, expected a value like the axis's"
        ) from None


def prepare(
    given: str,
    varies: Sequence[str],
    labels: Sequence[str],
    *,
    repeat: int,
    seed: int | None,
    horizon_s: float | None,
    marks: Sequence[str],
) -> MapPlan:
    """Everything a map runs, validated: every cell's scenario, before any run (:class:`UserError` on bad input)."""
    data, source = scenario_data(given)
    if seed is not None:
        data["seed"] = seed
    scenario = scenario_from_data(data, source=source)
    if not scenario.faults:
        raise UserError(
            f"{source}: a map needs a trigger to recover from; add one under faults (docs: concepts/triggers.md)"
        )
    known = scenario.labels()
    unknown = [label for label in labels if label not in known]
    if unknown:
        raise UserError(
            f"--strategy: no strategy labelled {unknown[0]!r} in {scenario.name}; labels: {', '.join(known)}"
        )
    chosen = [label for label in known if not labels or label in labels]
    axes = _axes(varies, scenario)
    horizon = horizon_s if horizon_s is not None else default_horizon_s(scenario)
    if horizon is not None and horizon <= 0:
        raise UserError(f"--horizon: got {format_duration(horizon)}; expected a duration above 0")
    cells = build_cells(data, scenario, axes, horizon, source)
    seeds = [scenario.seed + index for index in range(repeat)]
    tasks = tasks_of(cells, chosen, seeds)
    if len(tasks) > MAX_RUNS:
        raise UserError(f"the map would make {len(tasks):,} runs, more than {MAX_RUNS:,}; vary fewer values")
    found = [parse_mark(text, axes) for text in marks]
    return MapPlan(scenario.name, source, scenario.description, axes, chosen, seeds, horizon, cells, tasks, found)
