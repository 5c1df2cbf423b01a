"""Click types and option sets of ``retrystorm sim``, and the ad-hoc scenario built from flags."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from retrystorm.durations import format_duration, parse_duration
from retrystorm.errors import SpecError
from retrystorm.experiment.scenario import Scenario, load_scenario, scenario_from_data
from retrystorm.extras import require_extra
from retrystorm.loadgen.service_config import read_strategy
from retrystorm.loadgen.strategies import RetryStrategy
from retrystorm.target.models import OverloadModel
from retrystorm.user_files import prepare_out_folder

F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True, slots=True)
class LabelledStrategy:
    """A strategy and the label reports show for it."""

    label: str
    strategy: RetryStrategy


class StrategyType(click.ParamType):  # type: ignore[type-arg]
    """``[LABEL=]SPEC``: a label applies when the text before the first ``=`` has no ``:``."""

    name = "[LABEL=]SPEC"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> LabelledStrategy:
        if isinstance(value, LabelledStrategy):
            return value
        head, eq, tail = str(value).partition("=")
        label, spec = (head.strip(), tail) if eq and ":" not in head and head.strip() else (str(value).strip(), value)
        try:
            return LabelledStrategy(label, read_strategy(spec))
        except SpecError as error:
            self.fail(str(error), param, ctx)


class ClientRangeType(click.ParamType):  # type: ignore[type-arg]
    """``10,50,100`` or ``10-190/10`` -> a tuple of client counts >= 1."""

    name = "clients"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        text = str(value).replace(" ", "")
        try:
            if "-" in text:
                bounds, _, step = text.partition("/")
                low, high = (int(part) for part in bounds.split("-"))
                counts = tuple(range(low, high + 1, int(step or 1)))
            else:
                counts = tuple(int(part) for part in text.split(","))
        except ValueError:
            self.fail(f"got {value!r}, expected a list like 10,50,100 or a range like 10-190/10", param, ctx)
        if not counts or min(counts) < 1:
            self.fail(f"got {value!r}, expected client counts >= 1", param, ctx)
        return counts


class OptionalDurationType(click.ParamType):  # type: ignore[type-arg]
    """A duration, or ``none`` (kept as the string, to tell it from an option not given)."""

    name = "duration|none"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | str:
        if isinstance(value, float):
            return value
        if value == "none":
            return "none"
        try:
            return parse_duration(value, what=param.name if param and param.name else "duration")
        except SpecError as error:
            self.fail(f"{error} (or none)", param, ctx)


class OutageType(click.ParamType):  # type: ignore[type-arg]
    """``FOR@AT``: freeze the server for FOR starting at AT, e.g. ``30s@20s``."""

    name = "FOR@AT"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[float, float]:
        if isinstance(value, tuple):
            return value
        length, at_sign, start = str(value).partition("@")
        if not at_sign:
            self.fail(f"got {value!r}, expected FOR@AT like 30s@20s", param, ctx)
        try:
            return parse_duration(length, what="outage length"), parse_duration(start, what="outage start")
        except SpecError as error:
            self.fail(str(error), param, ctx)


STRATEGY = StrategyType()
CLIENT_RANGE = ClientRangeType()
OPTIONAL_DURATION = OptionalDurationType()
OUTAGE = OutageType()


def output_options(command: F) -> F:
    """``--json``, ``--csv``, ``--out DIR`` and ``--force``; rejects ``--json`` with ``--csv``; makes ``--out``
    ready before the work (:func:`~retrystorm.user_files.prepare_out_folder`)."""

    @click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout, nothing else.")
    @click.option("--csv", "as_csv", is_flag=True, help="Print the results as CSV on stdout.")
    @click.option(
        "-o", "--out", "folder", type=click.Path(file_okay=False, path_type=Path), default=None,
        help="Write results.json, results.csv, timeseries.csv, PNG plots and (scenario runs) report.html here.",
    )  # fmt: skip
    @click.option("--force", is_flag=True, help="Write into an --out folder that already holds results, over them.")
    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs["as_json"] and kwargs["as_csv"]:
            raise click.UsageError("--json and --csv print to the same stdout: choose one")
        force = kwargs.pop("force")
        if kwargs["folder"] is not None:
            require_extra("report", "--out (plots and report.html)")
            prepare_out_folder(kwargs["folder"], force=force)
        return command(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


#: Flag -> dotted scenario field; values of ``None`` mean "not given".
_FIELDS = {
    "budget": "load.budget",
    "users": "load.users",
    "think_time": "load.think_time",
    "duration": "load.duration",
    "arrival": "load.arrival",
    "rate": "load.rate",
    "max_attempts": "load.max_attempts",
    "deadline": "load.request_deadline",
    "sample_every": "sim.sample_every",
    "seed": "seed",
}


#: The flags of :data:`_FIELDS` that are durations, parsed to seconds with their units.
_DURATIONS = frozenset({"duration", "deadline", "sample_every"})


def _with_unit(seconds: object) -> object:
    """A duration flag's seconds written back with a unit, as a scenario file needs it (exactly: format_duration)."""
    return format_duration(seconds) if isinstance(seconds, float) else seconds


def adhoc_scenario(
    scenario_file: Path | None,
    *,
    model: OverloadModel | None,
    strategies: tuple[LabelledStrategy, ...],
    timeout: float | str | None,
    outages: tuple[tuple[float, float], ...],
    **flags: Any,
) -> Scenario:
    """The scenario file with the flags applied, or a scenario from the flags alone.

    ``--strategy`` and ``--outage`` replace the file's strategies and faults.
    """
    overrides: dict[str, Any] = {
        _FIELDS[key]: _with_unit(value) if key in _DURATIONS else value
        for key, value in flags.items()
        if value is not None
    }
    if model is not None:
        overrides["model"] = model
    if timeout is not None:
        overrides["load.attempt_timeout"] = None if timeout == "none" else _with_unit(timeout)
    if strategies:
        overrides["strategies"] = [{"label": item.label, "strategy": item.strategy} for item in strategies]
    if outages:
        overrides["faults"] = [
            {"pause": "target", "at": _with_unit(start), "for": _with_unit(length)} for length, start in outages
        ]
    if scenario_file is not None:
        return load_scenario(scenario_file, overrides=overrides)
    if not strategies:
        raise click.UsageError("give a SCENARIO file, or at least one --strategy for an ad-hoc run")
    data: dict[str, Any] = {"name": "ad-hoc", "model": "exponential", "load": {"users": 1000, "duration": 140.0}}
    for dotted, value in overrides.items():
        node = data
        *parents, key = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[key] = value
    return scenario_from_data(data)
