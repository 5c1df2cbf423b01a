"""The chaos API's request bodies as pydantic models: validated strictly, documented from the same models.

:class:`PauseRequest` is ``POST /outages``; :mod:`chaos.openapi` builds the API's
document from its JSON schema, so the document and the validation cannot disagree.
A refused body becomes one line naming the field (:func:`problem`); the pieces are the
shared ones of :mod:`retrystorm.bodies`, which the target's admin API uses too.
"""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, ValidationError

from retrystorm.bodies import Body, duration, first_problem
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


def problem(error: ValidationError) -> str:
    """The first problem of a refused pause body as one line: ``duration: got 'soon', expected ...``."""
    return first_problem(error, example=_EXAMPLE)
