"""The chaos API's request bodies as pydantic models: validated strictly, documented from the same models.

:class:`PauseRequest` is ``POST /outages``; :mod:`chaos.openapi` builds the API's
document from its JSON schema, so the document and the validation cannot disagree.
A refused body becomes one line naming the field (:func:`first_problem`).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, WithJsonSchema

from retrystorm.durations import ACCEPTED, parse_duration
from retrystorm.errors import SpecError

#: The longest target name accepted (names come from the command line and compose labels).
MAX_NAME_CHARS = 200


def _duration_s(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f'got {value!r}, expected a duration such as "30s" ({ACCEPTED})')  # noqa: TRY004
    if isinstance(value, str) and len(value) > 64:
        raise ValueError(f'got a text of {len(value)} characters, expected a duration such as "30s"')
    try:
        seconds = parse_duration(value, what="duration")
    except SpecError as error:
        raise ValueError(str(error).removeprefix("duration: ")) from None
    if not 0 < seconds < math.inf:
        raise ValueError(f'got {value!r}, expected a finite duration > 0 such as "30s"')
    return seconds


Duration = Annotated[
    float,
    BeforeValidator(_duration_s),
    WithJsonSchema(
        {"anyOf": [{"type": "string", "minLength": 1, "maxLength": 64}, {"type": "number", "exclusiveMinimum": 0}]}
    ),
]


class PauseRequest(BaseModel):
    """``POST /outages``: pause ``target`` for ``duration`` (clamped to the controller's maximum outage)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    target: str = Field(
        min_length=1,
        max_length=MAX_NAME_CHARS,
        description="a target of GET /targets: a registered process's name or a labelled compose service",
    )
    duration_s: Duration = Field(
        alias="duration", description='how long, e.g. "30s" or a number of seconds; clamped to the maximum outage'
    )
    backend: Literal["process", "docker"] | None = Field(
        default=None, description="which backend's target, when two backends have one of that name"
    )


def first_problem(error: ValidationError) -> str:
    """The first problem of a refused body as one line: ``duration: got 'soon', expected ...``."""
    problems = error.errors(include_url=False)
    if not problems:
        return "body: not accepted"
    problem = problems[0]
    field = ".".join(str(part) for part in problem["loc"]) or "body"
    kind = problem["type"]
    if kind == "json_invalid":
        return 'body: not valid JSON; expected {"target": "target", "duration": "30s"}'
    if kind == "model_type":
        return 'body: expected a JSON object like {"target": "target", "duration": "30s"}'
    if kind == "missing":
        return f"{field}: required"
    if kind == "extra_forbidden":
        return f"body: unknown field {field!r}; accepted: target, duration, backend"
    if kind == "value_error":
        return f"{field}: {problem['ctx']['error']}"
    message = str(problem["msg"]).replace("Input should be", "expected")
    return f"{field}: got {problem.get('input')!r:.60}; {message}"
