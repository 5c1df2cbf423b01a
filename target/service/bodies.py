"""The admin API's request bodies as pydantic models; :mod:`retrystorm.target.service.openapi` documents them.

* ``PUT /admin/model``: :data:`MODEL_REQUEST`, a spec string (:class:`SpecString`,
  alone) or a mapping, one body per registered model generated from its parameters
  (:func:`~retrystorm.spec_bodies.registry_bodies`), discriminated on ``name``, with
  the bounds a live server adds (:func:`~retrystorm.target.service.config.live_param`);
* ``POST /admin/reset``: :class:`ResetRequest`;
* ``PUT /admin/faults``: :class:`FaultRuleRequest`, every rule of a
  :class:`~retrystorm.target.faults.FaultRule` stated as bounds;
* ``PUT /admin/capacity``: :class:`CapacityRequest`.

The bodies check what their schema states; a model's text and its rules across
parameters are the spec's to check (:mod:`retrystorm.target.service.admin` builds the model).
:func:`problem` words a refusal in one line.
"""

from __future__ import annotations

from typing import Annotated, Any, Union

from pydantic import Discriminator, Field, Strict, Tag, TypeAdapter, ValidationError

from retrystorm.bodies import Body, Location, explained, field_path, first_problem, whole_number
from retrystorm.errors import shown
from retrystorm.spec import MAX_SPEC_CHARS
from retrystorm.spec_bodies import registry_bodies
from retrystorm.target.faults import MAX_ATTEMPT, MAX_COUNT, MAX_RETRY_AFTER_S, FaultRule, accepted
from retrystorm.target.models import MODELS
from retrystorm.target.models.capacity import MIN_CAPACITY
from retrystorm.target.service.config import live_param

#: The two kinds of model body, as the discriminator tells them apart.
SPEC, MAPPING = "spec", "mapping"
_SPEC_EXAMPLE = "exponential:limit=30,factor=1.05"


class SpecString(Body):
    """A model as one spec string; parameters left out take their defaults."""

    spec: Annotated[
        str, Strict(), Field(max_length=MAX_SPEC_CHARS), explained("a spec string like 'exponential:limit=40'")
    ] = Field(description="the model's spec (see retrystorm models)", examples=[_SPEC_EXAMPLE])

    @classmethod
    def unknown_field(cls, key: object) -> str:
        """A spec string comes alone."""
        return f"'spec' comes alone; also got {shown(key)}"


def _model_kind(body: Any) -> str:
    return SPEC if isinstance(body, dict) and SPEC in body else MAPPING


#: ``PUT /admin/model``: a :class:`SpecString`, or a body of a registered model.
ModelRequest: Any = Annotated[
    Union[  # noqa: UP007 - Tag annotations need the members spelt out
        Annotated[SpecString, Tag(SPEC)],
        Annotated[registry_bodies(MODELS, adjust=live_param), Tag(MAPPING)],
    ],
    Discriminator(_model_kind),
]
MODEL_REQUEST: TypeAdapter[Any] = TypeAdapter(ModelRequest)


def _model_place(location: Location) -> str:
    """``model 'exponential': limit`` for a parameter of a mapping; ``spec`` in a spec string."""
    kind, *rest = location or ("",)
    if kind == MAPPING and rest:
        name, *rest = rest
        return ": ".join([f"model {name!r}", *map(str, rest)])
    return field_path(tuple(rest))


def model_problem(error: ValidationError) -> str:
    """One line for a refused ``PUT /admin/model`` body."""
    problem = error.errors(include_url=False)[0]
    names = ", ".join(MODELS.names())
    if problem["type"] == "union_tag_not_found":
        return f"body: needs 'name' (one of {names}) or 'spec'"
    if problem["type"] == "union_tag_invalid":
        return f"unknown model {shown(problem['input'].get('name'))}; valid: {names}"
    return first_problem(error, where=_model_place)


class ResetRequest(Body):
    """What ``POST /admin/reset`` does besides zeroing the counters (no body: nothing)."""

    release_in_flight: Annotated[bool, Strict(), explained("true or false")] = Field(
        default=False, description="also answer every request in flight with 503 at once"
    )


def _status() -> Any:
    return Annotated[whole_number(ge=429, le=429) | whole_number(ge=500, le=599), explained(accepted("status"))]


def _whole(least: int, most: int, name: str) -> Any:
    return Annotated[whole_number(ge=least, le=most) | None, explained(accepted(name))]


class FaultRuleRequest(Body):
    """Which attempts of /api fail at once, and how; an attempt fails when every condition holds."""

    status: _status() = Field(default=503, description="the status sent: 429 or 5xx")  # type: ignore[valid-type]
    retry_after_s: _whole(0, MAX_RETRY_AFTER_S, "retry_after") = Field(  # type: ignore[valid-type]
        default=None, alias="retry_after", description="send Retry-After with this many seconds; null: no header"
    )
    first_attempts: _whole(1, MAX_ATTEMPT, "first_attempts") = Field(  # type: ignore[valid-type]
        default=None,
        description="fail only attempts 1..N of each logical request (Retrystorm-Attempt header, absent: 1); null: all",
    )
    probability: Annotated[
        float, Strict(), Field(gt=0, le=1, allow_inf_nan=False), explained(accepted("probability"))
    ] = Field(default=1.0, description="a qualifying attempt fails with this probability")
    count: _whole(1, MAX_COUNT, "count") = Field(  # type: ignore[valid-type]
        default=None, description="at most this many failures in all, then everything passes; null: no limit"
    )

    def rule(self) -> FaultRule:
        """The rule this body asks for (which checks it again)."""
        return FaultRule(**self.model_dump(exclude_unset=True))


class CapacityRequest(Body):
    """The fraction of its capacity the model runs at: every delay, tick and service time 1/capacity as long."""

    capacity: Annotated[
        float,
        Strict(),
        Field(ge=MIN_CAPACITY, le=1, allow_inf_nan=False),
        explained(f"a number >= {MIN_CAPACITY} and <= 1"),
    ] = Field(description="1: full capacity; 0.4: the model does in 1 s what it did in 0.4 s", examples=[0.4])
