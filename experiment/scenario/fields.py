"""Field types of the scenario schema: durations, specs, think times, recovery bounds.

Each is an ``Annotated`` type whose validator parses what a user writes in YAML and
raises ``ValueError`` with a message of the form ``got X; expected Y``, which the
loader prefixes with the file, line and field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Literal, TypeVar

from pydantic import BeforeValidator

from retrystorm.durations import ACCEPTED as DURATION_FORMS
from retrystorm.durations import parse_duration
from retrystorm.errors import SpecError
from retrystorm.loadgen.service_config import read_strategy
from retrystorm.loadgen.strategies import RetryBudget, RetryStrategy, parse_budget
from retrystorm.loadgen.think import ThinkTime, parse_think_time
from retrystorm.target.models import OverloadModel, parse_model

T = TypeVar("T")


def _duration(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        # pydantic turns ValueError, not TypeError, into a validation error
        raise ValueError(f"got {value!r}; expected {DURATION_FORMS}")  # noqa: TRY004
    try:
        seconds = parse_duration(value)
    except SpecError as error:
        raise ValueError(str(error).removeprefix("duration: ").replace(", expected", "; expected")) from None
    if math.isinf(seconds):
        raise ValueError(f"got {value!r}; expected a finite duration ({DURATION_FORMS})")
    return seconds


def _positive_duration(value: object) -> float:
    seconds = _duration(value)
    if seconds <= 0:
        raise ValueError(f"got {value!r}; expected a duration > 0")
    return seconds


def _parsed_by(parse: Callable[[object], T]) -> Callable[[object], T]:
    """A validator that parses with ``parse`` and reports its :class:`SpecError` to pydantic."""

    def validate(value: object) -> T:
        try:
            return parse(value)
        except SpecError as error:
            raise ValueError(str(error)) from None

    return validate


def _think_time(value: object) -> ThinkTime:
    try:
        return parse_think_time(value)
    except SpecError as error:
        raise ValueError(str(error).removeprefix("think time: ").replace(", expected", "; expected")) from None


def _recovery_bound(value: object) -> float | Literal["never"]:
    if value == "never":
        return "never"
    try:
        return _duration(value)
    except ValueError:
        raise ValueError(f"got {value!r}; expected a duration like 15s, or never") from None


Duration = Annotated[float, BeforeValidator(_duration)]
"""A duration >= 0: ``100ms``, ``2s``, ``5m``, or a bare number of seconds."""
PositiveDuration = Annotated[float, BeforeValidator(_positive_duration)]
"""A duration > 0."""
StrategyField = Annotated[RetryStrategy, BeforeValidator(_parsed_by(read_strategy))]
"""A strategy or preset spec, or ``grpc-service-config:PATH`` (read from the current directory)."""
BudgetField = Annotated[RetryBudget, BeforeValidator(_parsed_by(parse_budget))]
ModelField = Annotated[OverloadModel, BeforeValidator(_parsed_by(parse_model))]
ThinkTimeField = Annotated[ThinkTime, BeforeValidator(_think_time)]
"""A think time as :func:`retrystorm.loadgen.think.parse_think_time` reads it (the Locust user's ``--think-time``)."""
RecoveryBound = Annotated[float | Literal["never"], BeforeValidator(_recovery_bound)]
"""A duration within which recovery must happen, or ``never`` (a metastable failure must happen)."""
