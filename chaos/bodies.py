"""The chaos API's request bodies as pydantic models: validated strictly, documented from the same models.

:class:`PauseRequest` is ``POST /outages``, :class:`ThrottleRequest` ``POST /throttles``;
:mod:`retrystorm.chaos.openapi` builds the API's document from their JSON schemas, so the document and
the validation cannot disagree.
A refused body becomes one line naming the field (:func:`problem`); the pieces are the
shared ones of :mod:`retrystorm.bodies`, which the target's admin API uses too.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, Strict, ValidationError

from retrystorm.bodies import Body, duration, explained, first_problem
from retrystorm.chaos.cpu_quota import MIN_CAPACITY
from retrystorm.durations import ACCEPTED

#: The longest target name accepted (names come from the command line and compose labels).
MAX_NAME_CHARS = 200
#: The longest duration text accepted: ``1h2m3.456789s`` is 13 characters.
_DURATION_CHARS = 64
_EXAMPLE = 'a JSON object like {"target": "target", "duration": "30s"}'


class PauseRequest(Body):
    """``POST /outages``: pause ``target`` for ``duration`` (clamped to the controller's maximum outage)."""

    model_config = ConfigDict(populate_by_name=True)

    target: str = Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="a target of GET /targets: a registered process's name or a labelled compose service",
    )
    duration_s: duration(  # type: ignore[valid-type]
        accepted=f'a finite duration > 0 such as "30s" ({ACCEPTED}) or a number of seconds',
        above=0,
        max_chars=_DURATION_CHARS,
    ) = Field(
        alias="duration", description='how long, e.g. "30s" or a number of seconds; clamped to the maximum outage'
    )
    backend: Literal["process", "docker"] | None = Field(
        default=None, description="which backend's target, when two backends have one of that name"
    )


class ThrottleRequest(Body):
    """``POST /throttles``: cut ``target``'s CPU to ``capacity`` of its allowance for ``duration``."""

    model_config = ConfigDict(populate_by_name=True)

    target: str = Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="a target of GET /targets: a registered process's name or a labelled compose service",
    )
    capacity: Annotated[
        float,
        Strict(),
        Field(ge=MIN_CAPACITY, le=1, allow_inf_nan=False),
        explained(f"a fraction of the target's CPU allowance in (0, 1] (at least {MIN_CAPACITY}), e.g. 0.4"),
    ] = Field(
        description="the fraction of its CPU allowance the target keeps: of its existing CPU limit, "
        "else of every CPU it may run on"
    )
    duration_s: duration(  # type: ignore[valid-type]
        accepted=f'a finite duration > 0 such as "10s" ({ACCEPTED}) or a number of seconds',
        above=0,
        max_chars=_DURATION_CHARS,
    ) = Field(
        alias="duration", description='how long, e.g. "10s" or a number of seconds; clamped to the maximum outage'
    )
    backend: Literal["process", "docker"] | None = Field(
        default=None, description="which backend's target, when two backends have one of that name"
    )


_THROTTLE_EXAMPLE = 'a JSON object like {"target": "target", "capacity": 0.4, "duration": "10s"}'


def problem(error: ValidationError, example: str = _EXAMPLE) -> str:
    """The first problem of a refused body as one line: ``duration: got 'soon', expected ...``."""
    return first_problem(error, example=example)


def throttle_problem(error: ValidationError) -> str:
    """The first problem of a refused throttle body as one line."""
    return problem(error, _THROTTLE_EXAMPLE)
