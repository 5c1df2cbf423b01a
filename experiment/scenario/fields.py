"""Field types of the scenario schema: durations, specs, think times, recovery bounds.

Each is an ``Annotated`` type whose validator parses what a user writes in YAML and
raises ``ValueError`` with a message of the form ``got X; expected Y``, which the
loader prefixes with the file, line and field.

**Units are required.** A duration in a scenario file is written with its unit (``2s``,
``100ms``); a bare number other than 0 is refused, naming the field and the units, since
``attempt_timeout: 2000`` may mean 2,000 ms as easily as 2,000 s. The same holds inside a
spec written as a mapping (``{name: fixed, delay: 100ms}``) and for a think time. The
loader asks for this through the validation context (:data:`REQUIRE_UNITS`); a scenario
built in code from values already in seconds (flags parsed with their units) does not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BeforeValidator, ValidationInfo

from retrystorm.durations import ACCEPTED as DURATION_FORMS
from retrystorm.durations import parse_duration
from retrystorm.errors import SpecError, shown
from retrystorm.loadgen.service_config import read_strategy
from retrystorm.loadgen.strategies import BUDGETS, STRATEGIES, RetryBudget, RetryStrategy, parse_budget
from retrystorm.loadgen.think import THINK_TIMES, ThinkTime, parse_think_time
from retrystorm.spec import Registry, params_of
from retrystorm.spec_types import DURATION, DURATION_LIST, ParamType
from retrystorm.target.models import MODELS, OverloadModel, parse_model

T = TypeVar("T")

#: The validation context under which a bare number is no duration (what the loader passes for a file).
REQUIRE_UNITS = {"require_units": True}


def _units_required(info: ValidationInfo | None) -> bool:
    return bool(info is not None and isinstance(info.context, dict) and info.context.get("require_units"))


def _is_bare_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value != 0


def unit_problem(value: object) -> str:
    """The message for a duration written without its unit, and how to write it."""
    return (
        f"got {shown(value)}, a number without a unit; write {shown(value)}ms or {shown(value)}s "
        f"(expected {DURATION_FORMS})"
    )


def _check_units(value: object, info: ValidationInfo | None) -> None:
    if _units_required(info) and _is_bare_number(value):
        raise ValueError(unit_problem(value))


def _duration(value: object, info: ValidationInfo | None) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        # pydantic turns ValueError, not TypeError, into a validation error
        raise ValueError(f"got {value!r}; expected {DURATION_FORMS}")  # noqa: TRY004
    _check_units(value, info)
    try:
        seconds = parse_duration(value)
    except SpecError as error:
        raise ValueError(str(error).removeprefix("duration: ").replace(", expected", "; expected")) from None
    if math.isinf(seconds):
        raise ValueError(f"got {value!r}; expected a finite duration ({DURATION_FORMS})")
    return seconds


def _positive_duration(value: object, info: ValidationInfo | None) -> float:
    seconds = _duration(value, info)
    if seconds <= 0:
        raise ValueError(f"got {value!r}; expected a duration > 0")
    return seconds


def _is_duration_type(kind: ParamType) -> bool:
    inner = kind.optional_of or kind
    return inner in (DURATION, DURATION_LIST)


def spec_unit_problem(spec: object, registry: Registry[Any]) -> str | None:
    """For a spec written as a mapping: the first duration parameter given as a bare number, as a message.

    ``None`` when there is none, or when the mapping names no known class (parsing reports that).
    """
    if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
        return None
    try:
        cls = registry.get(str(spec["name"]))
    except SpecError:
        return None
    for info in params_of(cls):
        raw = spec.get(info.key)
        items = raw if isinstance(raw, list) else [raw]
        if _is_duration_type(info.type) and any(_is_bare_number(item) for item in items):
            bare = next(item for item in items if _is_bare_number(item))
            return f"{registry.kind} {cls.name!r}: {info.key}: {unit_problem(bare)}"
    return None


def _parsed_by(parse: Callable[[object], T], registry: Registry[Any] | None = None) -> Callable[..., T]:
    """A validator that parses with ``parse`` and reports its :class:`SpecError` to pydantic; with ``registry``,
    a mapping's durations need their units (:data:`REQUIRE_UNITS`)."""

    def validate(value: object, info: ValidationInfo | None) -> T:
        if registry is not None and _units_required(info):
            problem = spec_unit_problem(value, registry)
            if problem is not None:
                raise ValueError(problem)
        try:
            return parse(value)
        except SpecError as error:
            raise ValueError(str(error)) from None

    return validate


def _think_time(value: object, info: ValidationInfo | None) -> ThinkTime:
    _check_units(value, info)
    if _units_required(info) and (problem := spec_unit_problem(value, THINK_TIMES)) is not None:
        raise ValueError(problem)
    try:
        return parse_think_time(value)
    except SpecError as error:
        raise ValueError(str(error).removeprefix("think time: ").replace(", expected", "; expected")) from None


def _recovery_bound(value: object, info: ValidationInfo | None) -> float | Literal["never"]:
    if value == "never":
        return "never"
    _check_units(value, info)
    try:
        return _duration(value, None)
    except ValueError:
        raise ValueError(f"got {value!r}; expected a duration like 15s, or never") from None


Duration = Annotated[float, BeforeValidator(_duration)]
"""A duration >= 0: ``100ms``, ``2s``, ``5m`` (``0`` needs no unit; see the module docstring for bare numbers)."""
PositiveDuration = Annotated[float, BeforeValidator(_positive_duration)]
"""A duration > 0."""
StrategyField = Annotated[RetryStrategy, BeforeValidator(_parsed_by(read_strategy, STRATEGIES))]
"""A strategy or preset spec, or ``grpc-service-config:PATH`` (read from the current directory)."""
BudgetField = Annotated[RetryBudget, BeforeValidator(_parsed_by(parse_budget, BUDGETS))]
ModelField = Annotated[OverloadModel, BeforeValidator(_parsed_by(parse_model, MODELS))]
ThinkTimeField = Annotated[ThinkTime, BeforeValidator(_think_time)]
"""A think time as :func:`retrystorm.loadgen.think.parse_think_time` reads it (the Locust user's ``--think-time``)."""
RecoveryBound = Annotated[float | Literal["never"], BeforeValidator(_recovery_bound)]
"""A duration within which recovery must happen, or ``never`` (a metastable failure must happen)."""
